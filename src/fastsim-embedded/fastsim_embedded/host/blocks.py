"""Observation blocks on the capture bus (contract section 4, rules BK1-BK8).

A subscriber that passes ``max_block > 1`` accepts an :class:`ObservationBlock`: k
consecutive packed ticks in ONE envelope.  The bus stamps blocks for a Run only when
every ``observations`` subscriber opted in when the observer is bound (at least one;
``CaptureBus.block_stamper``), with ``k = min(their max_block, the host's own bound)``.

Per tick the simulation thread takes the bus lock, allocates the tick's global and
capture sequence (as a per-tick stamp would), copies the backend's buffer into the next
row of a preallocated ``(k, nbytes)`` block, writes the tick and its time into two
preallocated ``int64`` arrays and releases the lock: no Python object per tick.

    | #   | rule (where)                                                                 |
    |-----|------------------------------------------------------------------------------|
    | BK1 | k consecutive global and capture sequences, allocated per tick (``append``)  |
    | BK2 | every other stamp, ``publish``, ``subscribe``, ``unsubscribe`` and ``seal``   |
    |     | first delivers the pending block under the lock (``_flush_locked``)         |
    | BK3 | a reset's barrier is such a stamp: a block never spans generations           |
    | BK4 | full at k; ``flush_aged`` (the paced loop) when its oldest tick is too old   |
    | BK5 | ``flush`` before the unpaced loop waits on a pressed gauge (``host.flow``)   |
    | BK6 | ``seal`` flushes first: the cut counts every stamped tick                     |
    | BK7 | history keeps blocks as blocks; ``pieces`` replays them to a subscriber:      |
    |     | cut at ``from_sequence`` (a row view), split to its ``max_block``, or as      |
    |     | per-tick envelopes (``tick(i)``) when it did not opt in                      |
    | BK8 | a raising sink is reported once per envelope it was handed: once per block    |

A later subscriber that did not opt in flushes and turns the Run back to per-tick
stamping (``append`` answers ``False``; the observer stamps the tick itself); one with
a smaller ``max_block`` shrinks k.  A delivered block's arrays are read-only views and
their rows are never written again: the simulation thread fills an *arena* of
``ARENA_BLOCKS`` x k preallocated rows, and each block, full or cut early, is handed over
as a view of the rows it filled; the next block starts on the arena's next row
(``PendingBlock.take``).  So no block is copied, and the rows alive beyond those the lanes
charge are at most one arena's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from fastsim_contract.protocols import SinkSubscription
from fastsim_contract.values import Envelope, ObservationBlock, PackedLayout, SourceKind

__all__ = ["ARENA_BLOCKS", "BLOCK_AGE_S", "BlockAppend", "BlockCapture", "PendingBlock", "pieces"]

#: BK4: a paced Run delivers a pending block once its oldest tick is this old (wall time)
BLOCK_AGE_S = 0.25
#: An arena holds this many full blocks' rows.  A block cut early (BK2: a command or an
#: event between ticks, typically every few dozen ticks in a scripted Run) is handed over
#: as a view of its rows instead of a copy (a 60-tick cut of a 90-channel Run copied 300 KB
#: on the simulation thread, ~27 us); a new arena is allocated once fewer than k/2 rows are
#: left, so a block is seldom cut short by the arena's end.
ARENA_BLOCKS = 2
#: ``CaptureBus.block_stamper``'s per-tick append:
#: (generation, tick, sim_time_ns, buffer, channel_sequence) -> whether it took the tick
BlockAppend = Callable[[int, int, int, Any, int], bool]

_OBSERVATION = SourceKind.OBSERVATION
_OBSERVATIONS: str = SourceKind.OBSERVATION.value
_envelope: Callable[[type[Envelope], tuple[object, ...]], Envelope] = tuple.__new__
_monotonic = time.monotonic
_read_only = np.ndarray.setflags
# the flushed block is built through its slots, as the bus builds the per-tick values
# (``bus.py``): every field is the bus's own, so the constructor's checks are not repeated
_new = object.__new__
_set_capture, _set_channels, _set_layout, _set_buffer, _set_ticks, _set_times, _set_channel = (
    vars(ObservationBlock)[name].__set__
    for name in ("capture_sequence", "channels", "layout", "buffer", "ticks", "sim_time_ns", "channel_sequence")
)


class PendingBlock:
    """The block being filled: at most ``size`` (k) rows of one Run's packed layout, in
    an arena of ``ARENA_BLOCKS * size`` preallocated rows.

    ``raw`` is the ``(rows, nbytes)`` ``uint8`` buffer from the pending block's first row
    to the arena's end; ``flat`` a flat ``memoryview`` of the same memory in items of the
    layout's one dtype (bytes when the channels mix dtypes), ``width`` items a row: a
    backend buffer of that dtype and length is copied by one memoryview slice assignment,
    which refuses any other format or shape (then the buffer's bytes are copied,
    ``row_bytes``).  ``room`` is the rows the pending block may take: ``size``, or fewer
    at the arena's end; the block is delivered when ``n`` reaches it."""

    __slots__ = (
        "channel_sequence", "channels", "dtype", "first_capture", "first_global", "first_tick", "first_time", "flat",
        "generation", "layout", "n", "raw", "room", "since", "size", "tick_items", "ticks", "time_items", "times", "width",
    )

    def __init__(self, channels: tuple[str, ...], layout: PackedLayout, size: int) -> None:
        self.channels, self.layout, self.size = channels, layout, size
        dtypes = {np.dtype(dtype) for dtype, _ in layout.fields}
        one = dtypes.pop() if len(dtypes) == 1 else None
        self.dtype = one if one is not None and one.itemsize and layout.nbytes % one.itemsize == 0 else np.dtype(np.uint8)
        self.width = layout.nbytes // self.dtype.itemsize
        self.n = self.first_global = self.first_capture = self.generation = self.channel_sequence = 0
        self.first_tick = self.first_time = 0
        self.since = 0.0
        self._fresh()

    def _fresh(self) -> None:
        rows = self.size * ARENA_BLOCKS
        raw: Any = np.empty((rows, self.layout.nbytes), np.uint8)
        ticks: Any = np.empty(rows, np.int64)
        times: Any = np.empty(rows, np.int64)
        self.raw, self.ticks, self.times = raw, ticks, times
        self.flat = memoryview(raw.view(self.dtype).reshape(-1))
        self.tick_items, self.time_items = memoryview(ticks), memoryview(times)  # item stores
        self.room = self.size
        self.n = 0

    def row_bytes(self, buffer: Any) -> Any:
        """``buffer``'s bytes as one row (the general path: another dtype or shape)."""
        raw = np.ascontiguousarray(buffer).reshape(-1).view(np.uint8)
        if raw.nbytes != self.layout.nbytes:
            raise ValueError(f"PackedValues: buffer has {raw.nbytes} bytes, layout {self.layout.nbytes}")
        return raw

    def take(self) -> Envelope:
        """The pending rows as ONE read-only envelope: views of the ``n`` arena rows they
        fill, never written again.  The next block starts on the following row; a new
        arena is allocated once fewer than ``size // 2`` rows are left (then the tail is
        never used, and the lanes' charge of ``n`` rows a block undercounts the memory
        alive by at most one arena)."""
        n = self.n
        raw, ticks, times = self.raw[:n], self.ticks[:n], self.times[:n]
        for array in (raw, ticks, times):
            _read_only(array, write=False)
        left = len(self.ticks) - n
        if left < self.size // 2:  # size >= 2: a block of one is stamped per tick
            self._fresh()
        else:
            self.raw, self.ticks, self.times = self.raw[n:], self.ticks[n:], self.times[n:]
            self.flat = self.flat[n * self.width:]
            self.tick_items, self.time_items = self.tick_items[n:], self.time_items[n:]
            self.room = min(self.size, left)
            self.n = 0
        block = _new(ObservationBlock)
        _set_capture(block, self.first_capture)
        _set_channels(block, self.channels)
        _set_layout(block, self.layout)
        _set_buffer(block, raw)
        _set_ticks(block, ticks)
        _set_times(block, times)
        _set_channel(block, self.channel_sequence)
        envelope = _envelope(Envelope, (
            self.first_global, _OBSERVATION, self.generation, self.first_tick, self.first_time, block, None,
            self.first_capture,
        ))
        return envelope


def _part(envelope: Envelope, block: ObservationBlock, lo: int, hi: int) -> Envelope:
    part = ObservationBlock(
        block.capture_sequence + lo, block.channels, block.layout, block.buffer[lo:hi], block.ticks[lo:hi],
        block.sim_time_ns[lo:hi], block.channel_sequence + lo,
    )
    return envelope._replace(
        global_sequence=envelope.global_sequence + lo, tick=int(block.ticks[lo]),
        sim_time_ns=int(block.sim_time_ns[lo]), payload=part, source_sequence=part.capture_sequence,
    )


def pieces(envelope: Envelope, from_sequence: int, max_block: int) -> Iterator[Envelope]:
    """What a subscriber with ``max_block`` receives of a block ``envelope`` from global
    sequence ``from_sequence`` on (BK7): the block itself, its tail from ``from_sequence``
    (row views), parts of at most ``max_block`` ticks, or -- ``max_block`` 1 -- each tick
    as the per-tick envelope (``tick(i)``) with its own sequences, tick and time."""
    block: ObservationBlock = envelope.payload  # type: ignore[assignment]
    count = len(block)
    start = max(0, from_sequence - envelope.global_sequence)
    if max_block <= 1:
        ticks, times = block.ticks, block.sim_time_ns
        for i in range(start, count):
            yield _envelope(Envelope, (
                envelope.global_sequence + i, _OBSERVATION, envelope.generation, int(ticks[i]), int(times[i]),
                block.tick(i), None, envelope.source_sequence + i,
            ))
    elif start == 0 and count <= max_block:
        yield envelope
    else:
        for lo in range(start, count, max_block):
            yield _part(envelope, block, lo, min(count, lo + max_block))


class BlockCapture:
    """The block half of ``CaptureBus`` (the module table), on the bus's own state."""

    _lock: threading.Lock
    _global: int
    _source_seq: dict[str, int]
    _history: dict[str, list[Envelope]]
    _subscribers: dict[str, list[SinkSubscription]]
    _history_open: bool
    _sealed: bool
    #: the block the simulation thread is filling, when it holds at least one tick
    _pending: PendingBlock | None
    #: the Run's block (None: per-tick stamping)
    _blocks: PendingBlock | None
    #: each opted-in subscription's ``max_block`` (absent: 1)
    _max_block: dict[SinkSubscription, int]
    #: the bus's one delivery to a sink (a raising sink goes to ``on_sink_error``)
    _deliver: Callable[[SinkSubscription, Envelope], None]

    def block_stamper(self, channels: tuple[str, ...], layout: PackedLayout, bound: int) -> BlockAppend | None:
        """The per-tick block append for the Run, or ``None`` (stamp per tick): blocks
        only when every ``observations`` subscriber (at least one) opted in, of
        ``min(their max_block, bound)`` ticks."""
        with self._lock:
            self._flush_locked()
            subscribers = self._subscribers[_OBSERVATIONS]
            size = min([bound, *(self._max_block.get(sub, 1) for sub in subscribers)]) if subscribers else 1
            self._blocks = PendingBlock(channels, layout, size) if size > 1 else None
            if self._blocks is None:
                return None
        acquire, release = self._lock.acquire, self._lock.release
        sequences = self._source_seq

        def append(generation: int, tick: int, sim_time_ns: int, buffer: Any, channel_sequence: int) -> bool:
            acquire()
            try:
                block = self._blocks
                if block is None:  # per tick again (a subscriber that did not opt in), or sealed:
                    return False  # the observer's per-tick stamp raises TerminalError
                n = block.n
                width = block.width
                try:
                    block.flat[n * width:(n + 1) * width] = buffer  # one copy of the tick's bytes
                except (ValueError, TypeError):  # another dtype or shape: its bytes, checked
                    block.raw[n] = block.row_bytes(buffer)
                if n == 0:  # once per block
                    block.first_global = self._global + 1
                    block.first_capture = sequences.get(_OBSERVATIONS, 0) + 1
                    block.generation, block.channel_sequence, block.since = generation, channel_sequence, _monotonic()
                    block.first_tick, block.first_time = tick, sim_time_ns
                    self._pending = block
                self._global += 1
                sequences[_OBSERVATIONS] = sequences.get(_OBSERVATIONS, 0) + 1
                block.tick_items[n] = tick
                block.time_items[n] = sim_time_ns
                block.n = n = n + 1
                if n == block.room:  # k ticks, or the arena's last row
                    self._flush_locked()
                return True
            finally:
                release()

        return append

    def _flush_locked(self) -> None:
        """Under the lock: deliver the pending block (if any) as ONE envelope (BK2)."""
        block = self._pending
        if block is None:
            return
        self._pending = None
        count = block.n
        envelope = block.take()
        if self._history_open:
            self._history.setdefault(_OBSERVATIONS, []).append(envelope)
        for sub in self._subscribers[_OBSERVATIONS]:
            if self._max_block.get(sub, 1) < count:  # not in block mode: expanded or split
                self._deliver_block(sub, envelope, 0)
            else:  # BK8: ``_deliver`` reports a raising sink once, for the whole block
                self._deliver(sub, envelope)

    def _deliver_block(self, sub: SinkSubscription, envelope: Envelope, from_sequence: int) -> None:
        for piece in pieces(envelope, from_sequence, self._max_block.get(sub, 1)):
            self._deliver(sub, piece)

    def _block_subscribed(self, max_block: int) -> None:
        """Under the lock, after the pending block was flushed: a new ``observations``
        subscription; one that accepts smaller blocks shrinks k, one that did not opt in
        turns the Run back to per-tick stamping."""
        blocks = self._blocks
        if blocks is not None and max_block < blocks.size:
            self._blocks = PendingBlock(blocks.channels, blocks.layout, max_block) if max_block > 1 else None

    def flush(self) -> None:
        """Deliver the pending block now (BK5, the end of a Run); cheap when none is pending."""
        if self._pending is not None:  # read without the lock; re-checked under it
            with self._lock:
                self._flush_locked()

    def flush_aged(self, now: float, age_s: float = BLOCK_AGE_S) -> None:
        """BK4: deliver the pending block when its first tick was appended ``age_s`` or
        more before ``now`` (``time.monotonic``)."""
        block = self._pending
        if block is not None and now - block.since >= age_s:
            with self._lock:
                pending = self._pending
                if pending is not None and now - pending.since >= age_s:
                    self._flush_locked()

    @property
    def block_size(self) -> int:
        """The ticks a block holds at most (1: per-tick stamping)."""
        blocks = self._blocks
        return 1 if blocks is None else blocks.size
