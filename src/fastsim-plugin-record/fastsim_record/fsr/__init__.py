"""Deprecated import path: the FSR format is the top-level ``fastsim_recording_format`` package.

``import fastsim_record.fsr`` (and ``fastsim_record.fsr.model``, ``.reader``, ``.writer``,
``.validate``, ``.recover``, ``.transaction``, ``.errors``, ``.synth``) keeps working for
one release and emits a :class:`DeprecationWarning`.  It will be removed in the release
after.  Write ``import fastsim_recording_format`` instead.
"""

from __future__ import annotations

import fastsim_recording_format
from fastsim_record._deprecated import alias_package
from fastsim_recording_format import *  # noqa: F403  (the whole public surface, unchanged)

__all__ = list(fastsim_recording_format.__all__)
globals().update(alias_package(__name__, "fastsim_recording_format", ("errors", "model", "reader", "writer", "validate", "recover", "transaction", "synth")))
