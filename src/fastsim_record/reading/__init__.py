"""Deprecated import path: the reading API is ``fastsim_recording_format.reading``.

``import fastsim_record.reading`` (and its ``_codecs``, ``_dataset``, ``_errors``,
``_recording``, ``_tables``, ``_values`` and ``_view`` modules) keeps working for one
release and emits a :class:`DeprecationWarning`; it will be removed in the release after.
Write ``import fastsim_recording_format.reading`` instead (``fastsim_record.open`` and
``fastsim_record.Dataset`` stay, and do not warn).
"""

from __future__ import annotations

import importlib
import sys
import warnings

import fastsim_recording_format.reading
from fastsim_recording_format.reading import *  # noqa: F403  (the whole public surface, unchanged)

__all__ = list(fastsim_recording_format.reading.__all__)

_SUBMODULES = ("_codecs", "_dataset", "_errors", "_recording", "_tables", "_values", "_view")

warnings.warn(
    "fastsim_record.reading is deprecated; import fastsim_recording_format.reading instead",
    DeprecationWarning,
    stacklevel=2,
)

for _name in _SUBMODULES:
    sys.modules[f"{__name__}.{_name}"] = importlib.import_module(
        f"fastsim_recording_format.reading.{_name}"
    )
