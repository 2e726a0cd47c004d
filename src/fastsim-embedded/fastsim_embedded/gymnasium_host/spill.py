"""Rows of an episode that waits for a writer slot, kept on disk instead of in RAM or in an
open file (issue 23: open writers and RAM bounded whatever the number of sub-envs and the
length of their episodes).

    | # | when                                           | what                                       |
    |---|------------------------------------------------|--------------------------------------------|
    | 1 | an episode with no slot has ``max_pending``     | its queue's owner (a pool thread, never the|
    |   | rows queued                                     | env thread) appends each queued chunk to   |
    |   |                                                | the episode's spill file, then frees it    |
    | 2 | each append                                    | open, append one pickled chunk, close: no  |
    |   |                                                | spill file stays open between appends      |
    | 3 | the episode's ``Session`` opens (a slot freed, | the chunks are read back one at a time, in |
    |   | or its commit)                                 | order, and published before the queue      |
    | 4 | read back, or the episode ends without a       | the file is deleted                        |
    |   | ``Session`` (its open failed)                  |                                            |
    | 5 | the recording closes                           | the spill folder (created at the first     |
    |   |                                                | spill) is removed                          |

The folder is a fresh hidden one in the recording's directory (``.fsr-spill-*``, so the rows
stay on the disk the episodes are written to; a ``tmpfs`` ``/tmp`` would hold them in RAM
again).  Nothing in it is a recording: a recorder killed with ``kill -9`` leaves it behind,
and it is safe to delete.  The files are pickles this process wrote and reads back.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["SpillFile", "SpillFolder"]


class SpillFolder:
    """The recording's spill folder: made at the first spill, removed by ``remove`` (row 5)."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._path: Path | None = None
        self._names = itertools.count()
        self._lock = threading.Lock()

    @property
    def path(self) -> Path | None:
        """The folder, once a spill made it."""
        return self._path

    def new_file(self) -> Path:
        """A fresh file name in the folder (the folder is made on first use)."""
        with self._lock:
            if self._path is None:
                self._path = Path(tempfile.mkdtemp(prefix=".fsr-spill-", dir=self._directory))
            return self._path / f"episode-{next(self._names)}.pkl"

    def remove(self) -> None:
        """Row 5: the folder and anything left in it (only this recording's spill files)."""
        with self._lock:
            path, self._path = self._path, None
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)


class SpillFile:
    """One episode's spilled chunks (rows 1-4); only the owner of the episode's queue uses it."""

    def __init__(self, folder: SpillFolder) -> None:
        self._folder = folder
        self._path: Path | None = None
        self.chunks = 0  # chunks on disk, not read back yet

    def append(self, chunk: Any) -> None:
        """Rows 1-2: one chunk to the end of the file."""
        if self._path is None:
            self._path = self._folder.new_file()
        with open(self._path, "ab") as file:
            pickle.dump(chunk, file, protocol=pickle.HIGHEST_PROTOCOL)
        self.chunks += 1

    def replay(self) -> Iterator[Any]:
        """Row 3: each spilled chunk, in the order appended, one at a time; then row 4."""
        path, count = self._path, self.chunks
        if path is None or not count:
            return
        try:
            with open(path, "rb") as file:
                for _ in range(count):
                    yield pickle.load(file)
        finally:
            self.discard()

    def discard(self) -> None:
        """Row 4: forget the chunks and delete the file."""
        path, self._path, self.chunks = self._path, None, 0
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
