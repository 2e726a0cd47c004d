"""The capture bus: global recording sequence, per-source sequences, history, delivery.

One lock orders everything.  ``publish`` allocates the next global sequence, stamps an
immutable :class:`Envelope`, appends it to the source's history and delivers it to the
source's live subscribers, all under the lock; ``subscribe`` replays the history from
``from_sequence`` and registers the sink under the same lock, so a subscriber sees every
item exactly once and in order, whenever it subscribes before the history is closed.
``stamper(source)`` and ``packed_stamper(channels, layout)`` are ``publish`` bound once per
Run for the simulation thread's per-item hot path (control, events, the packed
observation): positional, no per-call lookups, the same rules and envelopes.

Rules:

    | # | rule                                                                          |
    |---|-------------------------------------------------------------------------------|
    | 1 | only sources in the CapturePlan get a global sequence; others are not built   |
    | 2 | global sequences are contiguous from 1 over every captured item               |
    | 3 | observation ticks and generation barriers share one capture_sequence counter  |
    | 4 | camera channels have one sequence each (``cameras.<alias>.<role>``)           |
    | 5 | control sources refuse subscriptions once control producers started           |
    | 6 | after ``close_history`` a subscription from an already-published sequence is  |
    |   | refused (history is bounded by the prepare boundary)                          |
    | 7 | after ``seal`` (the terminal cut) publishing raises TerminalError             |
    | 8 | observation blocks (opt-in ``max_block``): every other stamp, ``subscribe``,  |
    |   | ``unsubscribe`` and ``seal`` first deliver the pending block (``blocks``,     |
    |   | BK1-BK8)                                                                      |
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from fastsim_contract.errors import SubscriptionRefused, TerminalError
from fastsim_contract.protocols import SinkSubscription as _Subscription
from fastsim_contract.values import (
    CapturePlan,
    Envelope,
    ObservationBlock,
    ObservationTick,
    PackedLayout,
    PackedValues,
    SampleBlock,
    SourceKind,
)
from fastsim_embedded.host.blocks import BlockCapture, PendingBlock

__all__ = ["SUBSCRIBABLE", "CaptureBus", "PackedStamp", "SinkError", "Stamp"]

#: Source names a plugin can subscribe to.
SUBSCRIBABLE = (
    SourceKind.LIFECYCLE.value,
    SourceKind.PLUGIN_EVENT.value,
    SourceKind.CONTROL_AUDIT.value,
    SourceKind.CONTROL_RESULT.value,
    SourceKind.OBSERVATION.value,
    SourceKind.CAMERA.value,
    SourceKind.RENDER_STATE.value,
    SourceKind.GEOMETRY.value,
    SourceKind.FLUID_EMISSION.value,
)
_CONTROL = (SourceKind.CONTROL_AUDIT.value, SourceKind.CONTROL_RESULT.value)
_OBSERVATION = SourceKind.OBSERVATION
_OBSERVATIONS: str = SourceKind.OBSERVATION.value

Sink = Callable[[Envelope], None]
#: ``CaptureBus.stamper``'s publisher: (generation, tick, sim_time_ns, payload, portable_size)
Stamp = Callable[[int, int, int, object, "int | None"], Envelope]
#: ``CaptureBus.packed_stamper``'s publisher: (generation, tick, sim_time_ns, buffer, channel_sequence)
PackedStamp = Callable[[int, int, int, Any, int], Envelope]

# The packed observation's immutable values, built through their slots on the hot path
# (``publish_observation_packed``); tests pin them equal to the constructed values.
_new = object.__new__


def _slot(cls: type, name: str) -> Callable[[object, object], None]:
    setter: Callable[[object, object], None] = vars(cls)[name].__set__  # the slot's member descriptor
    return setter


_set_buffer = _slot(PackedValues, "buffer")
_set_layout = _slot(PackedValues, "layout")
_set_channels = _slot(SampleBlock, "channels")
_set_values = _slot(SampleBlock, "values")
_set_channel_sequence = _slot(SampleBlock, "channel_sequence")
_set_capture_sequence = _slot(ObservationTick, "capture_sequence")
_set_samples = _slot(ObservationTick, "samples")
#: ``Envelope`` is a tuple: one C call builds it from its fields, in field order
_envelope: Callable[[type[Envelope], tuple[object, ...]], Envelope] = tuple.__new__


class SinkError(Exception):
    """A subscriber's sink raised; the bus keeps delivering to the others."""


def _stream_of(source: SourceKind) -> str:
    if source is SourceKind.GENERATION_BARRIER:
        return SourceKind.OBSERVATION.value
    name: str = source.value
    return name


@attrs.define(eq=False)
class CaptureBus(BlockCapture):
    """Sequencing and delivery for one Run (observation blocks: ``BlockCapture``)."""

    plan: CapturePlan
    on_sink_error: Callable[[str, BaseException], None] = attrs.field(default=lambda _s, _e: None)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _global: int = attrs.field(init=False, default=0)
    _source_seq: dict[str, int] = attrs.field(init=False, factory=dict)
    _history: dict[str, list[Envelope]] = attrs.field(init=False, factory=dict)
    _subscribers: dict[str, list[_Subscription]] = attrs.field(init=False, factory=dict)
    _history_open: bool = attrs.field(init=False, default=True)
    _control_started: bool = attrs.field(init=False, default=False)
    _sealed: bool = attrs.field(init=False, default=False)
    _captured: dict[SourceKind, bool] = attrs.field(init=False, factory=dict)
    _streams: dict[SourceKind, str] = attrs.field(init=False, factory=dict)
    _pending: PendingBlock | None = attrs.field(init=False, default=None)
    _blocks: PendingBlock | None = attrs.field(init=False, default=None)
    _max_block: dict[_Subscription, int] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        for kind in SourceKind:  # precomputed: the hot path never touches Enum.value
            self._captured[kind] = self.plan.captures(kind.value)
            self._streams[kind] = _stream_of(kind)
        for stream in SUBSCRIBABLE:  # one list per stream for the Run: stampers bind it once
            self._subscribers[stream] = []

    # -- producers ---------------------------------------------------------------
    def captures(self, source: SourceKind) -> bool:
        """Whether items of ``source`` are captured (cheap; check before building payloads)."""
        return self._captured[source]

    def publish(
        self,
        source: SourceKind,
        *,
        generation: int,
        tick: int,
        sim_time_ns: int,
        payload: object,
        portable_size: int | None = None,
        sequence_key: str | None = None,
        wrap: Callable[[int, Any], object] | None = None,
    ) -> Envelope | None:
        """Stamp and deliver one item; ``None`` when the source is not captured.

        ``wrap(source_sequence, payload)``, when given, builds the final payload under the
        lock (observation ticks embed their capture_sequence).
        """
        if not self._captured[source]:
            return None
        stream = self._streams[source]
        key = sequence_key or stream
        with self._lock:
            if self._sealed:
                raise TerminalError(f"publish on {key!r} after the terminal cut")
            if self._pending is not None:  # rule 8: the pending block first
                self._flush_locked()
            self._global += 1
            seq = self._source_seq.get(key, 0) + 1
            self._source_seq[key] = seq
            return self._emit(
                stream, source, generation, tick, sim_time_ns,
                payload if wrap is None else wrap(seq, payload), portable_size, seq,
            )

    def stamper(self, source: SourceKind) -> Stamp | None:
        """``publish`` for the simulation thread's per-item hot path (control, events):
        ``None`` when ``source`` is not captured (rule 1: nothing is built), else a
        positional ``stamp(generation, tick, sim_time_ns, payload, portable_size)`` bound
        to the source's stream and sequence key -- the same rules and the same envelope as
        ``publish``, without the keyword plumbing and the per-call lookups."""
        if not self._captured[source]:
            return None
        stream = self._streams[source]
        acquire, release = self._lock.acquire, self._lock.release
        sequences, subscribers = self._source_seq, self._subscribers[stream]

        def stamp(generation: int, tick: int, sim_time_ns: int, payload: object, size: int | None) -> Envelope:
            acquire()  # the lock as ``with`` takes it, at half the cost: bound once
            try:  # ``_emit``, inlined: one Python frame per item
                if self._sealed:
                    raise TerminalError(f"publish on {stream!r} after the terminal cut")
                if self._pending is not None:  # rule 8: the pending block first
                    self._flush_locked()
                self._global = number = self._global + 1
                seq = sequences[stream] = sequences.get(stream, 0) + 1
                envelope = _envelope(Envelope, (number, source, generation, tick, sim_time_ns, payload, size, seq))
                if self._history_open:
                    self._history.setdefault(stream, []).append(envelope)
                for sub in subscribers:
                    try:
                        sub.sink(envelope)
                    except Exception as exc:  # a broken sink must not break the simulation thread
                        self.on_sink_error(sub.stream, exc)
                return envelope
            finally:
                release()

        return stamp

    def publish_observation_packed(
        self, generation: int, tick: int, sim_time_ns: int, channels: tuple[str, ...], buffer: Any,
        layout: PackedLayout, channel_sequence: int,
    ) -> Envelope:
        """``publish`` specialised for one packed observation tick (``packed_stamper``)."""
        return self.packed_stamper(channels, layout)(generation, tick, sim_time_ns, buffer, channel_sequence)

    def packed_stamper(self, channels: tuple[str, ...], layout: PackedLayout) -> PackedStamp:
        """``publish`` specialised for the per-tick packed observation (the simulation
        thread's hot path), bound once per Run to its channels and layout:
        ``stamp(generation, tick, sim_time_ns, buffer, channel_sequence)``.  Same rules,
        same values -- an ``Envelope`` of an ``ObservationTick`` of a ``SampleBlock`` over
        ``PackedValues`` -- built in one frame: the payload's objects through their slots,
        the envelope by one ``tuple.__new__`` (no keyword plumbing, no per-object
        ``__init__``; the only check ``PackedValues`` makes, the buffer size, is made here)."""
        nbytes = layout.nbytes
        acquire, release = self._lock.acquire, self._lock.release
        sequences, subscribers = self._source_seq, self._subscribers[_OBSERVATIONS]

        def stamp(generation: int, tick: int, sim_time_ns: int, buffer: Any, channel_sequence: int) -> Envelope:
            if buffer.nbytes != nbytes:
                raise ValueError(f"PackedValues: buffer has {buffer.nbytes} bytes, layout {nbytes}")
            values = _new(PackedValues)
            _set_buffer(values, buffer)
            _set_layout(values, layout)
            block = _new(SampleBlock)
            _set_channels(block, channels)
            _set_values(block, values)
            _set_channel_sequence(block, channel_sequence)
            acquire()  # as in ``stamper``: the lock bound once, ``_emit`` inlined
            try:
                if self._sealed:
                    raise TerminalError("publish on 'observations' after the terminal cut")
                if self._pending is not None:  # rule 8: the pending block first
                    self._flush_locked()
                self._global = number = self._global + 1
                seq = sequences[_OBSERVATIONS] = sequences.get(_OBSERVATIONS, 0) + 1
                observation = _new(ObservationTick)
                _set_capture_sequence(observation, seq)
                _set_samples(observation, block)
                envelope = _envelope(
                    Envelope, (number, _OBSERVATION, generation, tick, sim_time_ns, observation, None, seq)
                )
                if self._history_open:
                    self._history.setdefault(_OBSERVATIONS, []).append(envelope)
                for sub in subscribers:
                    try:
                        sub.sink(envelope)
                    except Exception as exc:  # a broken sink must not break the simulation thread
                        self.on_sink_error(sub.stream, exc)
                return envelope
            finally:
                release()

        return stamp

    def _emit(
        self, stream: str, source: SourceKind, generation: int, tick: int, sim_time_ns: int, payload: object,
        portable_size: int | None, seq: int,
    ) -> Envelope:
        """Under the lock: the ``Envelope`` (one ``tuple.__new__``: no keyword plumbing, no
        ``__new__`` frame), kept in the history while it is open, handed to each subscriber
        (the stampers inline this)."""
        envelope = _envelope(
            Envelope, (self._global, source, generation, tick, sim_time_ns, payload, portable_size, seq)
        )
        if self._history_open:
            self._history.setdefault(stream, []).append(envelope)
        for sub in self._subscribers.get(stream, ()):
            try:
                sub.sink(envelope)
            except Exception as exc:  # a broken sink must not break the simulation thread
                self.on_sink_error(sub.stream, exc)
        return envelope

    def next_source_sequence(self, key: str) -> int:
        """The sequence the next item on ``key`` will get (for payloads that embed it)."""
        with self._lock:
            return self._source_seq.get(key, 0) + 1

    def _deliver(self, sub: _Subscription, envelope: Envelope) -> None:
        try:
            sub.sink(envelope)
        except Exception as exc:  # a broken sink must not break the simulation thread
            self.on_sink_error(sub.stream, exc)

    def control_producers_started(self) -> None:
        """From now on control subscriptions are refused (rule 5)."""
        with self._lock:
            self._control_started = True

    def close_history(self) -> None:
        """Drop the startup history; later subscriptions see only live items (rule 6)."""
        with self._lock:
            self._history_open = False
            self._history.clear()

    def seal(self) -> tuple[int, dict[str, int]]:
        """Take the terminal cut: the last global sequence and every source's last sequence."""
        with self._lock:
            self._flush_locked()  # rule 8 (BK6): the cut counts every stamped tick, all delivered
            self._sealed = True
            self._blocks = None
            return self._global, dict(self._source_seq)

    @property
    def last_global_sequence(self) -> int:
        """The last allocated global sequence (0 before the first)."""
        with self._lock:
            return self._global

    # -- consumers ---------------------------------------------------------------
    def subscribe(self, stream: str, sink: Sink, *, from_sequence: int = 1, max_block: int = 1) -> _Subscription:
        """Atomic history-plus-live subscription to one stream; ``max_block > 1``
        (``observations``): the sink accepts observation blocks of up to that many ticks."""
        if stream not in SUBSCRIBABLE:
            raise SubscriptionRefused(f"subscribe: unknown source {stream!r}")
        if not self.plan.captures(stream):
            raise SubscriptionRefused(f"subscribe: source {stream!r} is not in the capture plan")
        if from_sequence < 1:
            raise SubscriptionRefused(f"subscribe: from_sequence must be >= 1 (got {from_sequence})")
        with self._lock:
            if self._sealed:
                raise SubscriptionRefused(f"subscribe: {stream!r} after the terminal cut")
            if stream in _CONTROL and self._control_started:
                raise SubscriptionRefused(
                    f"subscribe: control source {stream!r} after control producers started"
                )
            if not self._history_open and from_sequence <= self._global:
                raise SubscriptionRefused(
                    f"subscribe: history of {stream!r} is closed; sequence {from_sequence} is gone"
                )
            self._flush_locked()  # rule 8: the replay/live boundary falls between envelopes
            sub = _Subscription(self._unsubscribe, stream, sink)
            if max_block > 1:
                self._max_block[sub] = max_block
            for envelope in self._history.get(stream, ()):
                if envelope.payload.__class__ is ObservationBlock:
                    self._deliver_block(sub, envelope, from_sequence)
                elif envelope.global_sequence >= from_sequence:
                    self._deliver(sub, envelope)
            self._subscribers.setdefault(stream, []).append(sub)
            if stream == _OBSERVATIONS:
                self._block_subscribed(max_block)
        return sub

    def _unsubscribe(self, sub: _Subscription) -> None:
        with self._lock:
            if sub.closed:
                return
            self._flush_locked()  # rule 8: it receives every tick stamped while it listened
            sub.closed = True
            self._subscribers[sub.stream].remove(sub)
            self._max_block.pop(sub, None)

    def history(self, stream: str) -> Sequence[Envelope]:
        """A copy of the retained history of ``stream`` (tests, diagnostics)."""
        with self._lock:
            return tuple(self._history.get(stream, ()))
