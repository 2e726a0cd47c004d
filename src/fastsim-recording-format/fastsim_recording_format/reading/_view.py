"""The calls a whole recording and each of its segments share, each handed to the part
that owns it (see ``_recording`` for the decision table of which records each returns):

    | # | part                         | calls                                          |
    |---|------------------------------|------------------------------------------------|
    | 1 | ``Scope`` (``_file``)        | ``generations``; the file and generation every |
    |   |                              | other part reads through                       |
    | 2 | ``Numeric`` (``_numeric``)   | ``channels``, ``numeric``, ``numeric_all``,    |
    |   |                              | ``numeric_table``, ``channel_sequences``       |
    | 3 | ``JsonRecords``              | ``events``, ``lifecycle``, ``control``         |
    |   | (``_json_records``)          |                                                |
    | 4 | ``Cameras`` (``_cameras``)   | ``cameras``, ``frame_count``, ``frames``,      |
    |   |                              | ``frame``, ``frame_at``, ``calibration``       |
    | 5 | ``_actions``                 | ``actions``                                    |
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from fastsim_recording_format.reading._actions import Actions, actions_of
from fastsim_recording_format.reading._cameras import Cameras
from fastsim_recording_format.reading._file import Array, File, Scope, as_int
from fastsim_recording_format.reading._json_records import JsonRecords
from fastsim_recording_format.reading._numeric import Numeric, step_ticks
from fastsim_recording_format.reading._values import CalibrationSeries, Event, Frame, NumericSeries

__all__ = ["File", "View", "as_int", "step_ticks"]


class View:
    """The calls shared by a whole recording and one of its segments (table above)."""

    def _parts(self, scope: Scope) -> None:
        """Build the parts over ``scope`` (a recording's on open and unpickling, a segment's once)."""
        self._scope = scope
        self._numeric = Numeric(scope)
        self._json = JsonRecords(scope)
        self._cameras = Cameras(scope)

    def generations(self) -> tuple[int, ...]:
        """The Runtime generations this view holds."""
        return self._scope.generations()

    # -- numeric ------------------------------------------------------------------------
    def channels(self) -> tuple[str, ...]:
        """Every numeric channel, in stream and declaration order."""
        return self._numeric.channels()

    def numeric(self, channel: str) -> NumericSeries:
        """One channel's every sample, decoded with numpy over whole batches.

        A per-step channel (``Channel.per_step``) has no sample in the last tick of each
        generation: that tick's fill is dropped (docs/reading.md).
        """
        return self._numeric.series(channel)

    def channel_sequences(self, channel: str) -> Array:
        """The diagnostic live ``channel_sequence`` of each tick of ``channel``'s stream,
        aligned with ``numeric(channel)`` (rule CS1 of the numeric codec; ``-1`` where the
        recording does not say).  Diagnostic only: continuity is the stream sequence."""
        return self._numeric.channel_sequences(channel)

    def numeric_all(self, channels: Sequence[str] | None = None) -> dict[str, NumericSeries]:
        """Several channels at once (default: all): each stream's ticks are read once.

        The values of channels of one stream are views of one shared buffer (a per-step
        channel's are a copy without the fill of each generation's last tick).
        """
        return self._numeric.several(channels)

    def numeric_table(self, channels: Sequence[str] | None = None) -> Any:
        """Every selected channel of every tick as one ``pyarrow.Table`` (extra ``read``).

        Columns: ``time_ns``, ``generation``, then one per channel (scalars as numbers,
        vectors and matrices as fixed-size lists of their flattened elements).  A per-step
        channel is null in the last tick of each generation (where the file holds a fill).
        """
        return self._numeric.table(channels)

    # -- JSON streams -------------------------------------------------------------------
    def events(self) -> tuple[Event, ...]:
        """Plugin and scene events (streams of kind ``events``), in recording order."""
        return self._json.read("events")

    def lifecycle(self) -> tuple[Event, ...]:
        """Run lifecycle records (kind ``lifecycle``), in recording order."""
        return self._json.read("lifecycle")

    def control(self) -> tuple[Event, ...]:
        """Control audit and results (kind ``control``), in recording order."""
        return self._json.read("control")

    def actions(self, command: str | None = None, *, clock: str | None = None) -> Actions:
        """The commanded action of each observation tick, from the control audit (or a
        Gymnasium recording's ``action`` channel), refused commands marked (``_actions``).

        ``command``: ``<target>.<command>`` (default: the Run's declared control);
        ``clock``: a numeric channel whose ticks the rows align with (default: the first)."""
        return actions_of(self._scope, self._scope.file().tables.reader.run.attributes, command, clock)

    # -- cameras ------------------------------------------------------------------------
    def cameras(self) -> tuple[str, ...]:
        """Camera aliases that have an RGB stream."""
        return self._cameras.cameras()

    def frame_count(self, camera: str) -> int:
        """How many frames a camera has in this view."""
        return self._cameras.frame_count(camera)

    def frames(
        self,
        camera: str,
        *,
        generation: int | None = None,
        start_ns: int | None = None,
        stop_ns: int | None = None,
        step: int = 1,
    ) -> Iterator[Frame]:
        """Decoded frames, one at a time, in ``[start_ns, stop_ns)``, every ``step``-th.

        Up to three frames are decoded ahead on a second thread; closing the iterator
        early waits only for the frames already in flight."""
        return self._cameras.frames(camera, generation, start_ns, stop_ns, step)

    def frame(self, camera: str, index: int) -> Frame:
        """Frame ``index`` of a camera in this view (negative counts from the end)."""
        return self._cameras.frame(camera, index)

    def frame_at(self, camera: str, time_ns: int, *, generation: int | None = None) -> Frame:
        """The latest frame recorded at or before ``time_ns``."""
        return self._cameras.frame_at(camera, time_ns, generation=generation)

    def calibration(self, camera: str) -> CalibrationSeries:
        """Per-sample K, translation and quaternion, and the calibration epochs."""
        return self._cameras.calibration(camera)
