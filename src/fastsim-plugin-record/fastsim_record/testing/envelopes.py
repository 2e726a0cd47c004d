"""CapturedItem builders for tests: correctly stamped core ``CapturedItem`` values.

``EnvelopeFactory`` stamps what Core would: a contiguous global recording sequence
across all sources, a contiguous capture sequence per source, the current generation
(advanced by ``barrier``), tick and simulation time.
"""

from __future__ import annotations

import attrs

from fastsim_record.core.captured import CapturedItem, EnvelopeKind, LaneName

__all__ = ["DEFAULT_LANES", "EnvelopeFactory"]

#: The lane each conventional source publishes into.
DEFAULT_LANES: dict[str, LaneName] = {
    "lifecycle": LaneName.CRITICAL,
    "control": LaneName.CRITICAL,
    "events": LaneName.CRITICAL,
    "observations": LaneName.NUMERIC,
    "cameras": LaneName.MEDIA,
}


@attrs.define(eq=False)
class EnvelopeFactory:
    """Stamp envelopes in publication order, as Core would."""

    generation: int = 0
    tick: int = 0
    tick_ns: int = 8_333_333
    next_global: int = 1
    _capture: dict[str, int] = attrs.field(factory=dict)

    def _stamp(self, source: str) -> tuple[int, int]:
        seq = self.next_global
        self.next_global += 1
        capture = self._capture.get(source, 0) + 1
        self._capture[source] = capture
        return seq, capture

    def record(
        self,
        stream: str,
        *,
        source: str = "observations",
        lane: LaneName | None = None,
        required: bool = True,
        size: int | None = 64,
        payload: object = None,
        channel_sequence: int | None = None,
    ) -> CapturedItem:
        """The next ordinary record of ``stream`` from ``source``."""
        seq, capture = self._stamp(source)
        return CapturedItem(
            global_sequence=seq,
            source=source,
            capture_sequence=capture,
            stream=stream,
            lane=lane if lane is not None else DEFAULT_LANES.get(source, LaneName.NUMERIC),
            generation=self.generation,
            tick=self.tick,
            sim_time_ns=self.tick * self.tick_ns,
            required=required,
            size=size,
            channel_sequence=channel_sequence,
            payload=payload,
        )

    def barrier(self, *, source: str = "observations", lane: LaneName | None = None) -> CapturedItem:
        """A reset barrier: opens the next generation and restarts the tick count."""
        self.generation += 1
        self.tick = 0
        seq, capture = self._stamp(source)
        return CapturedItem(
            global_sequence=seq,
            source=source,
            capture_sequence=capture,
            stream="barrier",
            lane=lane if lane is not None else DEFAULT_LANES.get(source, LaneName.NUMERIC),
            generation=self.generation,
            tick=0,
            sim_time_ns=0,
            required=True,
            size=0,
            kind=EnvelopeKind.BARRIER,
        )

    def next_tick(self, n: int = 1) -> None:
        """Advance the committed tick."""
        self.tick += n

    def capture_through(self) -> dict[str, int]:
        """Per source, the last capture sequence stamped (a terminal cut's sources)."""
        return dict(self._capture)
