"""File names around an FSR file, spelled once, and the one directory fsync.

    | name                          | what                                                        |
    |-------------------------------|-------------------------------------------------------------|
    | ``<name>.fsr``                | a sealed, published recording (:data:`FSR_SUFFIX`)          |
    | ``<name>.fsr.incomplete``     | a recording being written (:data:`INCOMPLETE_SUFFIX`)       |
    | ``.<name>.lock``              | the writer's reservation of ``<name>`` (:data:`LOCK_SUFFIX`) |
    | ``.quarantine/``              | unsealed files set aside by the host (:data:`QUARANTINE_DIR`) |
    | ``.<OUT>.exporting-<pid>``    | ``fsr export``'s staging of OUT (:data:`EXPORTING_TAG`)     |
"""

from __future__ import annotations

import contextlib
import os
from typing import Final

__all__ = ["EXPORTING_TAG", "FSR_SUFFIX", "INCOMPLETE_SUFFIX", "LOCK_SUFFIX", "QUARANTINE_DIR", "fsync_dir"]

FSR_SUFFIX: Final = ".fsr"
INCOMPLETE_SUFFIX: Final = ".incomplete"
LOCK_SUFFIX: Final = ".lock"
QUARANTINE_DIR: Final = ".quarantine"
#: the tag of ``fsr export``'s hidden staging name, ``.<OUT>.exporting-<pid>``
EXPORTING_TAG: Final = "exporting"


def fsync_dir(path: str | os.PathLike[str], *, best_effort: bool = False) -> None:
    """Make a directory entry change durable (fsync the directory); ``best_effort``: an
    ``OSError`` (a file system that cannot fsync a directory) is ignored."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        if best_effort:
            return
        raise
    try:
        if best_effort:
            with contextlib.suppress(OSError):
                os.fsync(fd)
        else:
            os.fsync(fd)
    finally:
        os.close(fd)
