"""Sub-env slots: the ``-env<k>`` in ``FastSimRun-v0``'s file names, unique per output folder.

Each environment holds an exclusive ``flock`` on ``<output_dir>/.fsr-gym/<run>-env<k>.lock``
from construction to ``close()`` (the kernel frees it when the process dies, even by
``kill -9``), so two live environments writing to one folder never share ``k``, whether
they are sub-envs of one ``SyncVectorEnv``, workers of an ``AsyncVectorEnv`` or separate
programs.  The preferred ``k`` is ``env_index`` when given, else the index of the
``AsyncVectorEnv`` worker this process is (its process name ``Worker<...>-<k>``), else 0;
when it is taken, the next free one.  The lock files stay (empty, harmless).
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import re
from pathlib import Path

import attrs

__all__ = ["EnvSlot", "claim_slot", "worker_index"]

_WORKER = re.compile(r"^Worker<\w*VectorEnv>-(\d+)$")
_MAX_SLOTS = 100_000


@attrs.define
class EnvSlot:
    """A held sub-env index."""

    index: int
    fd: int | None

    def release(self) -> None:
        """Free the slot (idempotent)."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock


def worker_index() -> int | None:
    """This process's ``AsyncVectorEnv`` worker index, if it is one."""
    match = _WORKER.match(multiprocessing.current_process().name)
    return int(match.group(1)) if match else None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "run"


def claim_slot(output_dir: Path, run_name: str, preferred: int | None = None) -> EnvSlot:
    """Hold the first free slot from ``preferred`` (module docstring)."""
    folder = output_dir / ".fsr-gym"
    folder.mkdir(parents=True, exist_ok=True)
    start = preferred if preferred is not None else (worker_index() or 0)
    for index in range(start, start + _MAX_SLOTS):
        fd = os.open(folder / f"{_safe(run_name)}-env{index}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return EnvSlot(index, fd)
    raise RuntimeError(f"no free sub-env slot in {folder}")
