"""Deprecated import path: the reading API is ``fastsim_recording_format.reading``.

``import fastsim_record.reading`` (and its ``_codecs``, ``_dataset``, ``_errors``,
``_recording``, ``_tables``, ``_values`` and ``_view`` modules) keeps working for one
release and emits a :class:`DeprecationWarning`; it will be removed in the release after.
Write ``import fastsim_recording_format.reading`` instead (``fastsim_record.open`` and
``fastsim_record.Dataset`` stay, and do not warn).
"""

from __future__ import annotations

import fastsim_recording_format.reading
from fastsim_record._deprecated import alias_package
from fastsim_recording_format.reading import *  # noqa: F403  (the whole public surface, unchanged)

__all__ = list(fastsim_recording_format.reading.__all__)
globals().update(alias_package(__name__, "fastsim_recording_format.reading", ("_codecs", "_dataset", "_errors", "_recording", "_tables", "_values", "_view")))
