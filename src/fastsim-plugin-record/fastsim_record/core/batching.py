"""Batch flush decisions: a pure function of what the batch holds.

The worker appends each released, encoded record to its current batch and tells the
``Batcher`` the record's generation, simulation time and exact encoded payload bytes.
The ``Batcher`` answers with the batches to write now.  Rules:

| #  | when                                        | reason     | the closed batch          |
|----|---------------------------------------------|------------|---------------------------|
| B1 | a record's generation differs from the held | GENERATION | everything held before it |
|    | batch's generation (checked before adding)  |            |                           |
| B2 | held items >= ``max_items``                 | ITEMS      | everything held           |
| B3 | held encoded payload bytes >= ``max_bytes`` | BYTES      | everything held           |
| B4 | held sim-time span (max - min) >= span      | SIM_SPAN   | everything held           |
| B5 | ``close(GENERATION)`` at a reset barrier    | GENERATION | everything held           |
| B6 | ``close(FINALIZE)`` at finalization         | FINALIZE   | the partial batch         |

B2-B4 are checked after adding, in that order (the first that holds names the
reason); ``flush_reason`` is that check as a pure function.  ``add_run`` accounts a run
of records of one generation and one payload size whose simulation times do not go
down, and closes exactly the batches that adding them one by one would close (B7).  An empty batch is never
closed.  Each ``BatchSummary.items`` says how many of the oldest held records it covers.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Sequence

import attrs

from fastsim_record.core.errors import InvalidLimits

__all__ = ["BatchHold", "BatchLimits", "BatchSummary", "Batcher", "FlushReason", "flush_reason"]

class FlushReason(enum.Enum):
    """Why a batch was closed."""

    ITEMS = "items"
    BYTES = "bytes"
    SIM_SPAN = "sim_span"
    GENERATION = "generation"
    FINALIZE = "finalize"


_NS_PER_S = 1_000_000_000


def _positive(_instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InvalidLimits(
            f"batching.{attribute.name}: must be a positive integer, got {value!r}", field=attribute.name
        )


@attrs.frozen(kw_only=True)
class BatchLimits:
    """Configured flush limits; all must be positive."""

    max_items: int = attrs.field(validator=_positive)
    max_bytes: int = attrs.field(validator=_positive)
    max_sim_span_ns: int = attrs.field(validator=_positive)

    @classmethod
    def from_config(cls, max_items: int, max_bytes: int, max_sim_duration_s: float) -> BatchLimits:
        """Limits from the authored ``batching`` block (seconds become nanoseconds)."""
        return cls(
            max_items=max_items,
            max_bytes=max_bytes,
            max_sim_span_ns=round(max_sim_duration_s * _NS_PER_S),
        )


@attrs.frozen(kw_only=True)
class BatchHold:
    """What a batch holds: the only input of ``flush_reason``."""

    items: int
    payload_bytes: int
    generation: int
    min_sim_time_ns: int
    max_sim_time_ns: int


@attrs.frozen(kw_only=True)
class BatchSummary:
    """A closed batch: why, and what it covers."""

    reason: FlushReason
    generation: int
    items: int
    payload_bytes: int
    min_sim_time_ns: int
    max_sim_time_ns: int


def flush_reason(hold: BatchHold, limits: BatchLimits) -> FlushReason | None:
    """Rules B2-B4: the limit ``hold`` has reached, or ``None``."""
    return _reached(
        hold.items, hold.payload_bytes, hold.max_sim_time_ns - hold.min_sim_time_ns,
        limits.max_items, limits.max_bytes, limits.max_sim_span_ns,
    )


def _reached(items: int, nbytes: int, span: int, max_items: int, max_bytes: int, max_span: int) -> FlushReason | None:
    """Rules B2-B4 over plain numbers (``flush_reason``; the ``Batcher`` builds no hold)."""
    if items <= 0:
        return None
    if items >= max_items:
        return FlushReason.ITEMS
    if nbytes >= max_bytes:
        return FlushReason.BYTES
    if span >= max_span:
        return FlushReason.SIM_SPAN
    return None


_NOTHING: tuple[BatchSummary, ...] = ()


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class Batcher:
    """Running batch accounting for the writer worker (rules B1-B6)."""

    limits: BatchLimits
    _items: int = attrs.field(init=False, default=0)
    _bytes: int = attrs.field(init=False, default=0)
    _generation: int = attrs.field(init=False, default=0)
    _min_t: int = attrs.field(init=False, default=0)
    _max_t: int = attrs.field(init=False, default=0)
    _max_items: int = attrs.field(init=False)
    _max_bytes: int = attrs.field(init=False)
    _max_span: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._max_items = self.limits.max_items
        self._max_bytes = self.limits.max_bytes
        self._max_span = self.limits.max_sim_span_ns

    def add(self, generation: int, sim_time_ns: int, payload_bytes: int) -> tuple[BatchSummary, ...]:
        """Account one record already appended to the batch; the batches to write now."""
        if self._items == 0:
            self._generation = generation
            self._min_t = self._max_t = sim_time_ns
            self._items = 1
            self._bytes = payload_bytes
            if self._max_items > 1 and payload_bytes < self._max_bytes:
                return _NOTHING
            return self._limit_close(_NOTHING)
        if generation != self._generation:  # B1
            closed = self._close(FlushReason.GENERATION)
            self._generation = generation
            self._min_t = self._max_t = sim_time_ns
            self._items = 1
            self._bytes = payload_bytes
            return self._limit_close((closed,))
        self._items += 1
        self._bytes += payload_bytes
        if sim_time_ns < self._min_t:
            self._min_t = sim_time_ns
        elif sim_time_ns > self._max_t:
            self._max_t = sim_time_ns
        if (
            self._items < self._max_items
            and self._bytes < self._max_bytes
            and self._max_t - self._min_t < self._max_span
        ):
            return _NOTHING
        return self._limit_close(_NOTHING)

    def add_run(
        self, generation: int, sim_times: Sequence[int], payload_bytes: int
    ) -> tuple[BatchSummary, ...]:
        """B7: ``add(generation, t, payload_bytes)`` for each ``t`` of ``sim_times`` (which
        must not go down), in O(batches closed x log n) instead of per record."""
        n = len(sim_times)
        held = self._items
        if n and (not held or generation == self._generation):
            # the steady state: the whole run stays below every limit (B2-B4), so no
            # record of it closes the batch; its end points are its time bounds
            first, last = int(sim_times[0]), int(sim_times[-1])
            lo, hi = (min(self._min_t, first), max(self._max_t, last)) if held else (first, last)
            items, nbytes = held + n, self._bytes + n * payload_bytes
            if items < self._max_items and nbytes < self._max_bytes and hi - lo < self._max_span:
                self._generation = generation
                self._items, self._bytes, self._min_t, self._max_t = items, nbytes, lo, hi
                return _NOTHING
        out: list[BatchSummary] = []
        i = 0
        if n and self._items and generation != self._generation:  # B1
            out.append(self._close(FlushReason.GENERATION))
        while i < n:
            if self._items == 0:
                self._generation = generation
                self._min_t = self._max_t = int(sim_times[i])
                self._items, self._bytes = 1, payload_bytes
                i += 1
            else:
                i += self._extend(sim_times, i, payload_bytes)
            reason = self._reason()
            if reason is not None:
                out.append(self._close(reason))
        return tuple(out)

    def _reason(self) -> FlushReason | None:
        """``flush_reason(self.hold(), self.limits)`` without building the hold."""
        return _reached(self._items, self._bytes, self._max_t - self._min_t, self._max_items, self._max_bytes, self._max_span)

    def _extend(self, sim_times: Sequence[int], i: int, payload_bytes: int) -> int:
        """Add records ``i..`` up to the first that reaches a limit (B2-B4); how many."""
        k = min(self._max_items - self._items, len(sim_times) - i)  # B2
        if payload_bytes > 0:  # B3: the first k with bytes + k * size >= max_bytes
            k = min(k, max(1, -(-(self._max_bytes - self._bytes) // payload_bytes)))
        low = min(self._min_t, int(sim_times[i]))
        if self._max_t - low >= self._max_span:  # B4 already holds with the first record
            k = 1
        else:
            j = bisect.bisect_left(sim_times, low + self._max_span, i, i + k)
            k = min(k, j - i + 1)
        self._items += k
        self._bytes += k * payload_bytes
        self._min_t = low
        self._max_t = max(self._max_t, int(sim_times[i + k - 1]))
        return k

    def _limit_close(self, before: tuple[BatchSummary, ...]) -> tuple[BatchSummary, ...]:
        reason = self._reason()
        if reason is None:
            return before
        return (*before, self._close(reason))

    def _close(self, reason: FlushReason) -> BatchSummary:
        summary = BatchSummary(
            reason=reason, generation=self._generation, items=self._items,
            payload_bytes=self._bytes, min_sim_time_ns=self._min_t, max_sim_time_ns=self._max_t,
        )
        self._items = 0
        self._bytes = 0
        return summary

    def close(self, reason: FlushReason) -> BatchSummary | None:
        """Rules B5/B6: close the held batch (reset barrier or finalization), if any."""
        if self._items == 0:
            return None
        return self._close(reason)

    def hold(self) -> BatchHold:
        """What the current batch holds."""
        return BatchHold(
            items=self._items, payload_bytes=self._bytes, generation=self._generation,
            min_sim_time_ns=self._min_t, max_sim_time_ns=self._max_t,
        )
