"""Gap accounting: declared optional loss as exact, ordered ``GapRecord`` values.

Rules (checked by ``GapLedger.record``, ``coalesce`` and ``append_gap``):

| #  | rule                                                                             |
|----|----------------------------------------------------------------------------------|
| G1 | every lost envelope becomes a gap covering exactly its global sequence and its    |
|    | source's capture sequence, with the stream, lane, generation and reason           |
| G2 | a gap sits at its position in the global order (the merge releases it there)     |
| G3 | any gap marks the artifact degraded                                              |
| G4 | a gap on a required stream is a required loss, which is fatal                    |
| G5 | adjacent gaps coalesce only when global and capture sequences are both           |
|    | contiguous and stream, source, lane, generation, reason and required all match;  |
|    | the lanes keep their gaps coalesced (``append_gap``), so consecutive losses of     |
|    | one stream and generation become one gap with a count                            |
| G6 | per lane, the sum of gap counts equals the lane's ``lost`` counter               |
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TypeVar

import attrs

from fastsim_record.core.captured import CapturedItem, LaneName

__all__ = ["GapLedger", "GapReason", "GapRecord", "append_gap", "coalesce"]

class GapReason(enum.Enum):
    """Why envelopes were lost."""

    DROP_OLDEST = "drop_oldest"
    DROP_NEWEST = "drop_newest"
    DEGRADED = "degrade_recording"


T = TypeVar("T")  # what ``coalesce`` passes through besides gaps


@attrs.frozen(kw_only=True)
class GapRecord:
    """An exact run of lost envelopes of one stream, placed in the global order."""

    stream: str
    source: str
    lane: LaneName
    reason: GapReason
    generation: int
    required: bool
    first_global: int
    last_global: int
    first_capture: int
    last_capture: int
    tick: int = 0  # the tick of the first lost envelope (camera calibration, rule C8)

    @property
    def count(self) -> int:
        """Number of lost envelopes this gap explains."""
        return self.last_global - self.first_global + 1

    @property
    def global_sequences(self) -> range:
        """The global sequences this gap explains."""
        return range(self.first_global, self.last_global + 1)

    @classmethod
    def for_envelope(cls, envelope: CapturedItem, reason: GapReason) -> GapRecord:
        """The gap explaining exactly one lost envelope (rule G1)."""
        seq, capture = envelope.global_sequence, envelope.capture_sequence
        return cls(
            stream=envelope.stream, source=envelope.source, lane=envelope.lane, reason=reason,
            generation=envelope.generation, required=envelope.required,
            first_global=seq, last_global=seq, first_capture=capture, last_capture=capture,
            tick=envelope.tick,
        )

    def extends(self, other: GapRecord) -> bool:
        """True when ``other`` directly continues this gap (rule G5)."""
        return (
            other.first_global == self.last_global + 1
            and other.first_capture == self.last_capture + 1
            and other.stream == self.stream
            and other.source == self.source
            and other.lane is self.lane
            and other.generation == self.generation
            and other.reason is self.reason
            and other.required == self.required
        )


    def joined(self, other: GapRecord) -> GapRecord:
        """This gap and ``other``, which ``extends`` it, as one gap (rule G5)."""
        return attrs.evolve(self, last_global=other.last_global, last_capture=other.last_capture)


def coalesce(items: Iterable[T | GapRecord]) -> list[T | GapRecord]:
    """Merge directly adjacent gaps in an ordered release stream (rule G5).

    Non-gap items pass through untouched and break a run.
    """
    out: list[T | GapRecord] = []
    for item in items:
        if isinstance(item, GapRecord) and out:
            last = out[-1]
            if isinstance(last, GapRecord) and last.extends(item):
                out[-1] = last.joined(item)
                continue
        out.append(item)
    return out


def append_gap(gaps: list[GapRecord], gap: GapRecord) -> None:
    """Append ``gap`` to an ordered list, joined to the last gap when it continues it (G5).

    The lanes keep their lost envelopes this way, so a run of consecutive losses in one
    stream and generation is one ``GapRecord`` (and one FSR GAP record) however long it is.
    """
    if gaps and gaps[-1].extends(gap):
        gaps[-1] = gaps[-1].joined(gap)
    else:
        gaps.append(gap)


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class GapLedger:
    """Worker-side account of every released gap (rules G3, G4, G6)."""

    _gaps: int = attrs.field(default=0, init=False)
    _lost_by_lane: dict[LaneName, int] = attrs.field(factory=dict, init=False)
    _lost_by_stream: dict[str, int] = attrs.field(factory=dict, init=False)
    _required: list[GapRecord] = attrs.field(factory=list, init=False)

    def record(self, gap: GapRecord) -> None:
        """Account for one released gap."""
        self._gaps += 1
        n = gap.count
        self._lost_by_lane[gap.lane] = self._lost_by_lane.get(gap.lane, 0) + n
        self._lost_by_stream[gap.stream] = self._lost_by_stream.get(gap.stream, 0) + n
        if gap.required:
            self._required.append(gap)

    @property
    def gap_count(self) -> int:
        """Number of gap records accounted."""
        return self._gaps

    @property
    def degraded(self) -> bool:
        """Rule G3: any gap marks the artifact degraded."""
        return self._gaps > 0

    @property
    def required_losses(self) -> tuple[GapRecord, ...]:
        """Rule G4: gaps on required streams (each one is fatal)."""
        return tuple(self._required)

    def lost(self, lane: LaneName) -> int:
        """Lost envelopes accounted for ``lane`` (rule G6 compares this to the lane)."""
        return self._lost_by_lane.get(lane, 0)

    def lost_by_stream(self) -> dict[str, int]:
        """Lost envelopes per stream."""
        return dict(self._lost_by_stream)
