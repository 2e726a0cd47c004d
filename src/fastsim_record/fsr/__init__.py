"""Deprecated import path: the FSR format is the top-level ``fastsim_recording_format`` package.

``import fastsim_record.fsr`` (and ``fastsim_record.fsr.model``, ``.reader``, ``.writer``,
``.validate``, ``.recover``, ``.transaction``, ``.errors``, ``.synth``) keeps working for
one release and emits a :class:`DeprecationWarning`.  It will be removed in the release
after.  Write ``import fastsim_recording_format`` instead.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import fastsim_recording_format
from fastsim_recording_format import *  # noqa: F403  (the whole public surface, unchanged)

__all__ = list(fastsim_recording_format.__all__)

_SUBMODULES = ("errors", "model", "reader", "writer", "validate", "recover", "transaction", "synth")

warnings.warn(
    "fastsim_record.fsr is deprecated; import fastsim_recording_format instead",
    DeprecationWarning,
    stacklevel=2,
)

for _name in _SUBMODULES:
    sys.modules[f"{__name__}.{_name}"] = importlib.import_module(
        f"fastsim_recording_format.{_name}"
    )
