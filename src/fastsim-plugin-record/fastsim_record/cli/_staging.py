"""Staging beside OUT and the publish that replaces it: what ``fsr export``, ``synth`` and
``index`` share.

    | # | step      | rule                                                                 |
    |---|-----------|----------------------------------------------------------------------|
    | 1 | stale     | ``.OUT.<verb>-<pid>`` left by a process that is gone (kill -9, power |
    |   |           | loss) is removed before the new run starts; one whose PID is alive   |
    |   |           | (a concurrent run) is left alone and named                           |
    | 2 | stage     | the new output is written to ``.OUT.<verb>-<this pid>``              |
    | 3 | publish   | stop signals held (``_signals.deferred``): an existing OUT is moved  |
    |   |           | aside to ``.OUT.replaced-<pid>`` (only with ``--overwrite``), the    |
    |   |           | staging renamed to OUT, then the old OUT removed; without            |
    |   |           | ``--overwrite`` an OUT that appeared meanwhile is never replaced     |
    |   |           | once OUT is in place the outcome is decided: a stop signal held by    |
    |   |           | the publish, or sent later, no longer interrupts (``_signals.settle``)|
    | 4 | any error | the staging (ours) is removed; a moved-aside OUT is put back         |

The overlap guard (``fastsim_recording_format.overlap``) has run before step 1, so OUT
is never an input nor a folder holding one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from pathlib import Path

from fastsim_contract.lifetime import pid_alive
from fastsim_record.cli import _signals
from fastsim_recording_format.files import fsync_dir

__all__ = ["clear_stale", "publish", "remove", "staging"]


def staging(out: Path, verb: str, pid: int | None = None) -> Path:
    """``.OUT.<verb>-<pid>`` beside OUT (row 2)."""
    return out.parent / f".{out.name}.{verb}-{os.getpid() if pid is None else pid}"


def remove(path: Path) -> None:
    """Remove a file, link or folder tree (ours: staging or a moved-aside OUT)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a dead process's leftover that carries our reused PID
    return pid_alive(pid)


def clear_stale(out: Path, verbs: tuple[str, ...]) -> list[Path]:
    """Row 1: remove the leftovers of dead runs; the ones of live runs, returned."""
    pattern = re.compile(rf"^\.{re.escape(out.name)}\.({'|'.join(map(re.escape, verbs))})-(\d+)$")
    busy: list[Path] = []
    try:
        names = os.listdir(out.parent)
    except OSError:
        return busy
    for name in names:
        found = pattern.match(name)
        if found is None:
            continue
        path = out.parent / name
        if _alive(int(found.group(2))):
            busy.append(path)
        else:
            with contextlib.suppress(OSError):
                remove(path)
    return busy


def publish(tmp: Path, out: Path, overwrite: bool) -> None:
    """Row 3: move ``tmp`` to ``out``; ``FileExistsError`` when OUT exists without ``overwrite``."""
    aside = staging(out, "replaced")
    with _signals.deferred():
        moved = False
        if os.path.lexists(out):
            if not overwrite:
                raise FileExistsError(errno.EEXIST, "appeared while this command ran; not replaced", str(out))
            os.rename(out, aside)
            moved = True
        try:
            if tmp.is_dir() and not tmp.is_symlink():
                os.rename(tmp, out)
            else:
                os.link(tmp, out, follow_symlinks=False)  # never replaces a file that appeared meanwhile
                os.unlink(tmp)
        except BaseException:
            if moved:
                with contextlib.suppress(OSError):
                    os.rename(aside, out)
            raise
        fsync_dir(out.parent, best_effort=True)
        if moved:
            remove(aside)
        _signals.settle()  # OUT is published: a stop signal from here on cannot undo that

