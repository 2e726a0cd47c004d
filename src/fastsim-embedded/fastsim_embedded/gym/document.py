"""The Run a ``FastSimRun-v0`` plays: its ``run`` argument as a ``RunDocument``.

``run`` is a Run file (a path), a loaded ``RunDocument`` or a ``CompiledRun`` (its
document: each episode is prepared from it with its own seed and number, as ``fsr record``
prepares a Run).  Anything else is a ``TypeError`` of one line.
"""

from __future__ import annotations

import os

import attrs

from fastsim_contract.run import RunDocument, load_run
from fastsim_contract.run_compiler import CompiledRun

__all__ = ["run_document", "without_plugins"]


def run_document(run: object) -> RunDocument:
    """The Run document of ``run`` (module docstring)."""
    if isinstance(run, RunDocument):
        return run
    if isinstance(run, CompiledRun):
        return run.run
    if isinstance(run, str | os.PathLike):
        return load_run(run)
    raise TypeError(f"FastSimRun-v0: run must be a Run file, a RunDocument or a CompiledRun (got {type(run).__name__})")


def without_plugins(document: RunDocument) -> RunDocument:
    """The Run without any plugin: nothing is recorded (``record=False``)."""
    return attrs.evolve(document, plugins=())
