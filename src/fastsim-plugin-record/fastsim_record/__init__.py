"""fastsim-plugin-record: the Record plugin for FastSim Runs.

The plugin registers its component catalog (``fastsim.components`` / ``fastsim.record``)
and its managed plugin factory (``fastsim.plugins`` / ``fastsim.record``); the same
distribution also carries the embedded host's two ``fastsim.hosts`` entry points and the
``fsr`` script (README, "What this repository is").  A Run pays the recording cost only
when ``plugin://fastsim/record`` is selected.
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.3.12"
COMPONENT_ID = "plugin://fastsim/record"

__all__ = ["COMPONENT_ID", "__version__"]

# Reading recordings (``fr.open``, ``fr.Dataset``): loaded on first use, so discovering the
# plugin's catalog never imports numpy or the reader.
_READING = frozenset({"open", "Dataset", "Recording", "Segment", "Episode", "Actions", "Info", "NumericSeries", "Frame",
                      "CalibrationSeries", "CalibrationEpoch", "Event", "ReadError"})
if TYPE_CHECKING:
    from fastsim_recording_format.reading import *  # noqa: F403


def __getattr__(name: str) -> Any:
    if name in _READING:
        from fastsim_recording_format import reading

        return getattr(reading, name)
    raise AttributeError(f"module 'fastsim_record' has no attribute {name!r}")
