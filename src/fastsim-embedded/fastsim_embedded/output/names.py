"""Output names on disk: which names may be written, and one recorder per name.

    | # | check                                   | refusal (``OutputRefused``, one line)        |
    |---|-----------------------------------------|----------------------------------------------|
    | 1 | ``fastsim_contract.output_names``: bare,| names the character, the hidden or unsealed  |
    |   | printable, not hidden, not              | name, or the sizes and the limit (NAME_MAX   |
    |   | ``.incomplete``, short enough for the   | of the output folder's file system)          |
    |   | hidden staging name                     |                                              |
    | 2 | (kept for the table's numbering)        |                                              |
    | 5 | not a file this process reads           | ``fastsim_recording_format.overlap``: the    |
    |   | (``protect_inputs``: a Replay's SOURCE, | same file (links too) as an input, even with |
    |   | the Run file), nor a folder holding one | ``--overwrite``                              |
    | 3 | ``.<name>.lock`` is free (``flock``)    | another recorder is writing this name now    |
    | 4 | the lock file is a plain file           | a planted symlink is never followed          |

``NameLock`` is an exclusive, non-blocking ``flock`` held for the whole transaction;
the kernel releases it when the process dies, so a crash never leaves a name locked.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

import attrs

from fastsim_contract.errors import LeaseError
from fastsim_contract.output_names import NAME_MAX, STAGING_SUFFIX, output_name_refusal
from fastsim_recording_format.files import LOCK_SUFFIX
from fastsim_recording_format.overlap import overlap

__all__ = [
    "STAGING_SUFFIX", "NameLock", "OutputRefused", "check_output_name", "identity_of", "lidentity", "protect_inputs",
    "with_suffix",
]



class OutputRefused(LeaseError):
    """This output name must not be written now; ``str`` is one line naming the file."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


def with_suffix(name: str, suffix: str) -> str:
    """``name`` with ``suffix`` before its extension: ``a-00001.fsr`` + ``-env2`` ->
    ``a-00001-env2.fsr``."""
    stem, dot, ext = name.rpartition(".")
    return f"{stem}{suffix}.{ext}" if dot and stem else f"{name}{suffix}"


#: files this process was asked to read (a Replay's SOURCE, the Run file): never an output
_INPUTS: list[str] = []


def protect_inputs(paths: list[str]) -> None:
    """Row 5: no output of this process may replace ``paths`` or a folder holding one."""
    _INPUTS.extend(os.fspath(p) for p in paths)


def check_output_name(name: str, directory: Path | None = None) -> str | None:
    """Why ``name`` cannot be an output file name (``None`` when it can): the Core
    contract's one rule (``fastsim_contract.output_names``), with the name limit of
    ``directory``'s file system when it exists (else 255 bytes); and row 5."""
    limit = NAME_MAX
    if directory is not None:
        try:
            limit = os.pathconf(directory, "PC_NAME_MAX")
        except (OSError, ValueError):
            limit = NAME_MAX
    refusal = output_name_refusal(name, limit)
    if refusal is None and directory is not None and _INPUTS:
        refusal = overlap(directory / name, _INPUTS)
    return refusal


def identity_of(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def lidentity(path: Path) -> tuple[int, int] | None:
    try:
        return identity_of(os.stat(path, follow_symlinks=False))
    except FileNotFoundError:
        return None


@attrs.define(eq=False)
class NameLock:
    """An exclusive ``flock`` on ``<dir>/.<name>.lock`` (one recorder per output name).

    The lock file is unlinked on release while the lock is still held; a process that
    opened the old file and then wins its lock sees that the path no longer names its
    inode and tries again, so two recorders never both believe they hold the name.
    """

    path: Path
    fd: int | None

    @classmethod
    def acquire(cls, directory: Path, name: str, final: Path) -> NameLock:
        """Take the lock at once or raise ``OutputRefused`` (never waits)."""
        path = directory / f".{name}{LOCK_SUFFIX}"
        for _ in range(20):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise OutputRefused(path, "the lock file is a symbolic link; refusing to follow it") from None
                raise OutputRefused(path, f"cannot create the lock file: {exc.strerror}") from None
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OutputRefused(path, "the lock file is not a regular file")
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise OutputRefused(
                        final, "another recorder is writing this output right now "
                        f"(it holds {path.name}); choose another name or --output-dir",
                    ) from None
                except OSError as exc:  # e.g. ENOLCK: a file system without locks
                    raise OutputRefused(
                        path, f"cannot lock the output name ({exc.strerror}); record to a local file system",
                    ) from None
                if lidentity(path) == identity_of(os.fstat(fd)):
                    return cls(path, fd)
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # the holder released (and unlinked) it between our open and lock
        raise OutputRefused(final, "could not take the output lock (it keeps changing hands)")

    def release(self) -> None:
        """Unlink the lock file (only if it is still ours), then unlock (idempotent)."""
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            if lidentity(self.path) == identity_of(os.fstat(fd)):
                self.path.unlink()
        except OSError:
            pass  # a stale lock file is harmless: the next recorder locks and verifies it
        finally:
            os.close(fd)
