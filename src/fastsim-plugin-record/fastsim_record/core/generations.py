"""Source continuity, generations and reset barriers.

``capture_sequence`` is the persistence-continuity sequence: Core assigns it
contiguously per selected source, barriers included.  ``channel_sequence`` is
diagnostic metadata only and is never checked here.  A pump runs one
``SourceContinuity.check`` per envelope before ``try_publish``.

Pump validation rules (``SourceContinuity.check``):

| #  | rule                                                                              |
|----|-----------------------------------------------------------------------------------|
| S1 | the envelope belongs to this source                                               |
| S2 | ``capture_sequence`` is exactly the previous one + 1 (the first is 1)             |
| S3 | ``global_sequence`` is strictly greater than the source's previous one            |
| S4 | on a barrier-carrying source, a record carries the current generation and a       |
|    | barrier opens exactly the next one; on other sources the generation never falls  |

A violation is returned as a ``Discontinuity`` value (the pump latches it as fatal);
the tracker then resynchronises on the offending envelope so one fault is one report.

A block of ``k`` ticks (issue 26, ``advance_block``) is checked as its first tick --
S2 and S3 on its first capture and global sequences, S4 on its one generation -- and
then advances the tracker by ``k``: its last capture sequence is ``c + k - 1`` and its last
global sequence ``g + k - 1`` (Core gives a block ``k`` consecutive ones of each).

Per-stream index rules (``StreamIndexer``, worker side, after the merge):

| #  | rule                                                                              |
|----|-----------------------------------------------------------------------------------|
| P1 | each stream's record index restarts at 0 in every generation                      |
| P2 | a barrier closes the current batch (see ``batching``) and is not a stream record  |
"""

from __future__ import annotations

import attrs

from fastsim_record.core.captured import CapturedItem, EnvelopeKind
from fastsim_record.core.errors import RuleId

__all__ = ["ContinuityRule", "Discontinuity", "SourceContinuity", "StreamIndexer"]

_RECORD = EnvelopeKind.RECORD


class ContinuityRule(RuleId):
    """The pump validation rules of the module table."""

    SOURCE = "S1"
    CAPTURE_SEQUENCE = "S2"
    GLOBAL_ORDER = "S3"
    GENERATION = "S4"


@attrs.frozen
class Discontinuity:
    """A pump-validation failure (rules S1-S4): fatal for the recording."""

    rule: ContinuityRule
    source: str
    global_sequence: int
    expected: int
    actual: int
    reason: str


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class SourceContinuity:
    """Pump-side validator for one selected source (rules S1-S4)."""

    source: str
    carries_barriers: bool = True
    first_capture: int = 1
    generation: int = 0
    _next_capture: int = attrs.field(init=False)
    _last_global: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        self._next_capture = self.first_capture

    def check(self, envelope: CapturedItem) -> Discontinuity | None:
        """Validate one stamped envelope; ``None`` when it continues the source."""
        if (
            envelope.capture_sequence == self._next_capture
            and envelope.global_sequence > self._last_global
            and envelope.generation == self.generation
            and envelope.kind is _RECORD
            and envelope.source == self.source
        ):
            self._next_capture += 1
            self._last_global = envelope.global_sequence
            return None
        return self._check_slow(envelope)

    def advance(self, global_sequence: int, capture_sequence: int, generation: int) -> bool:
        """``check``'s fast path from scalars, for an ordinary record of this source.

        True (and the tracker advanced) when it continues the source; False changes
        nothing: the caller then runs ``check`` on the full envelope for the verdict.
        """
        if (
            capture_sequence == self._next_capture
            and global_sequence > self._last_global
            and generation == self.generation
        ):
            self._next_capture += 1
            self._last_global = global_sequence
            return True
        return False

    def advance_block(
        self, global_sequence: int, capture_sequence: int, count: int, generation: int
    ) -> Discontinuity | None:
        """A block of ``count`` ticks of this source (module doc): ``None`` and the tracker
        advanced by ``count``, or the first tick's violation (the tracker resynchronised
        past the block, so one fault is one report)."""
        if (
            capture_sequence == self._next_capture
            and global_sequence > self._last_global
            and generation == self.generation
        ):
            self._next_capture = capture_sequence + count
            self._last_global = global_sequence + count - 1
            return None
        problem = self._problem(self.source, global_sequence, capture_sequence, generation, _RECORD)
        self._next_capture = capture_sequence + count
        self._last_global = max(self._last_global, global_sequence + count - 1)
        self.generation = max(self.generation, generation)
        return problem

    def _check_slow(self, envelope: CapturedItem) -> Discontinuity | None:
        problem = self._problem(
            envelope.source, envelope.global_sequence, envelope.capture_sequence, envelope.generation, envelope.kind
        )
        self._next_capture = envelope.capture_sequence + 1
        self._last_global = max(self._last_global, envelope.global_sequence)
        self.generation = max(self.generation, envelope.generation)
        return problem

    def _problem(
        self, source: str, seq: int, capture: int, gen: int, kind: EnvelopeKind
    ) -> Discontinuity | None:
        if source != self.source:
            return Discontinuity(
                ContinuityRule.SOURCE, self.source, seq, 0, 0,
                f"source {self.source!r} received an envelope of source {source!r}",
            )
        if capture != self._next_capture:
            return Discontinuity(
                ContinuityRule.CAPTURE_SEQUENCE, self.source, seq, self._next_capture, capture,
                f"source {self.source!r}: capture_sequence {capture} "
                f"does not continue {self._next_capture - 1} (global sequence {seq})",
            )
        if seq <= self._last_global:
            return Discontinuity(
                ContinuityRule.GLOBAL_ORDER, self.source, seq, self._last_global + 1, seq,
                f"source {self.source!r}: global sequence {seq} does not follow "
                f"{self._last_global}",
            )
        if self.carries_barriers:
            want = self.generation + 1 if kind is EnvelopeKind.BARRIER else self.generation
            ok = gen == want
        else:
            want = self.generation
            ok = gen >= want
        if not ok:
            what = "barrier" if kind is EnvelopeKind.BARRIER else "record"
            return Discontinuity(
                ContinuityRule.GENERATION, self.source, seq, want, gen,
                f"source {self.source!r}: {what} at global sequence {seq} carries generation "
                f"{gen}, expected {want}",
            )
        return None

    @property
    def last_capture(self) -> int:
        """The last capture sequence accepted (``first_capture - 1`` before any)."""
        return self._next_capture - 1


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class StreamIndexer:
    """Per-stream record index that restarts at 0 in every generation (rule P1)."""

    _state: dict[str, tuple[int, int]] = attrs.field(init=False, factory=dict)

    def next_index(self, stream: str, generation: int) -> int:
        """The index of the next record of ``stream`` in ``generation``."""
        state = self._state.get(stream)
        index = state[1] + 1 if state is not None and state[0] == generation else 0
        self._state[stream] = (generation, index)
        return index
