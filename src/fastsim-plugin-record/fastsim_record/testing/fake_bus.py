"""The fake Core's capture bus: sequencing, history, subscriptions and publishing.

``FakeBus`` is one part of :class:`fastsim_record.testing.fake_core.FakeCore`; it owns
its state (the global and per-source sequences, history, subscribers, held deliveries,
the seal) and rules 1-5 of that module's table.

Blocks of ticks (contract section 4, BK1-BK8; ``max_block``, the fake's own bound, 1 by
default: no blocks).  At the prepare boundary (``start_producers``) the bus stamps
``ObservationBlock`` values for the rest of the Run when every ``observations``
subscription opted in (``max_block > 1``), with ``k`` the smallest bound; history is
closed from then on, so it never holds a block (BK7 holds trivially).  Each tick whose
values have exactly the plan's dtypes and shapes takes its global and capture sequence
at once (BK1) and its packed row waits in the pending block; a tick that does not fit the
layout flushes and goes out per tick (a subscriber that opted in takes both forms).  The
pending block is delivered first by any other stamp on any source, a reset's barrier
included (BK2, BK3), at ``k`` ticks (BK4), by ``flush`` -- which the flow calls before it
waits on a pressed gauge (BK5) -- and by the seal (BK6).  A later live ``observations``
subscription that does not opt in flushes and switches the Run back to per-tick stamping.
With ``packed_ticks`` a per-tick tick that fits the layout carries ``PackedValues`` over its
row, as a packing backend's does (so a Run's per-tick and block forms take one encoding path).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import attrs
import numpy as np

from fastsim_contract.errors import SubscriptionRefused, TerminalError
from fastsim_contract.harness import Profile
from fastsim_contract.payloads import FrozenDict, freeze
from fastsim_contract.payloads import portable_size as _portable_size
from fastsim_contract.protocols import SinkSubscription as Subscription
from fastsim_contract.values import (
    CameraSample,
    CapturePlan,
    ChannelDescriptor,
    ChannelSample,
    CompletionRequest,
    Envelope,
    GenerationBarrier,
    ObservationTick,
    PackedLayout,
    PackedValues,
    SampleBlock,
    SourceKind,
    TerminalSemanticCut,
)
from fastsim_record.testing.fake_blocks import PendingBlock, pack_row, packed_layout
from fastsim_recording_format.encoding import readonly

__all__ = ["KINDS", "MANDATORY_SOURCES", "FakeBus", "InjectedFault", "Subscription", "check_fault"]

T = TypeVar("T")

MANDATORY_SOURCES = ("lifecycle", "events", "control.audit", "control.result")
#: Every source the fake Core can sequence, by name: the contract's source kinds (a
#: generation barrier travels on the observations source, as in the embedded host).
KINDS = {kind.value: kind for kind in SourceKind if kind is not SourceKind.GENERATION_BARRIER}
_CONTROL = ("control.audit", "control.result")


class InjectedFault(RuntimeError):
    """An error raised on purpose by a fake."""


def check_fault(faults: set[str], step: str) -> None:
    """Raise :class:`InjectedFault` when ``step`` is one of the injected ``faults``."""
    if step in faults:
        raise InjectedFault(f"injected fault at {step}")


@attrs.define(eq=False)
class FakeBus:
    """Sequencing and delivery of the fake Core (rules 1-5)."""

    plan: CapturePlan
    channels: Sequence[ChannelDescriptor]
    sensor_hz: float
    portable_sizes: bool
    faults: set[str]  # the Core's ``prepare_faults`` (shared: tests add to it)
    generation: int = 0
    tick: int = 0
    global_sequence: int = 0
    sealed: bool = False
    history_open: bool = True
    control_started: bool = False
    source_sequences: dict[str, int] = attrs.field(factory=dict)
    history: dict[str, list[Envelope]] = attrs.field(factory=dict)
    subscribers: dict[str, list[Subscription]] = attrs.field(factory=dict)
    subscribe_calls: list[tuple[str, int, tuple[str, ...]]] = attrs.field(factory=list)
    held: dict[str, list[Envelope]] = attrs.field(factory=dict)
    max_block: int = 1  # the fake's own bound on a block (1: it never stamps one)
    packed_ticks: bool = False  # per-tick ticks as PackedValues after the boundary (module doc)
    #: (source, max_block) of every accepted subscription
    subscribe_blocks: list[tuple[str, int]] = attrs.field(factory=list)
    blocks_stamped: int = 0  # block envelopes stamped so far
    _accepts: dict[int, int] = attrs.field(factory=dict)  # id(subscription) -> its max_block
    _block: PendingBlock | None = None  # while the Run stamps blocks (module doc)
    _packing: PackedLayout | None = None  # per-tick ticks' packed layout (``packed_ticks``)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _source_locks: dict[str, threading.RLock] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        for name in KINDS:
            self._source_locks[name] = threading.RLock()
            self.history[name] = []
            self.subscribers[name] = []

    def before_cut(self, what: str, action: Callable[[], T]) -> T:
        """``action()`` under the bus lock, or ``TerminalError`` once the cut sealed publishing."""
        with self._lock:
            if self.sealed:
                raise TerminalError(f"{what} after the terminal cut")
            return action()

    def seal(self, winner: CompletionRequest) -> TerminalSemanticCut:
        """Seal publishing (rule 6) and return the exact cut (a pending block counted, BK6)."""
        with self._blocking():
            with self._lock:
                block = self._take_block()
                self.sealed = True
                finals = FrozenDict(dict(self.source_sequences))
                cut = TerminalSemanticCut(self.global_sequence, finals, winner, self.generation)
            self._deliver_block(block)
        return cut

    def subscribe(
        self, grants: set[str], source: str, sink: Any, from_sequence: int, channels: tuple[str, ...],
        max_block: int = 1,
    ) -> Subscription:
        """Rule 3 for a component holding ``grants``; ``max_block`` > 1 opts into blocks."""
        check_fault(self.faults, f"subscribe:{source}")
        if max_block.__class__ is not int or max_block < 1 or (max_block > 1 and source != "observations"):
            raise SubscriptionRefused(f"subscribe: max_block {max_block!r} (an int >= 1, > 1 for observations only)")
        if source not in KINDS:
            raise SubscriptionRefused(f"subscribe: unknown source {source!r}")
        plan = self.plan
        if not plan.captures(source):
            raise SubscriptionRefused(f"subscribe: source {source!r} is not in the capture plan")
        if source == "observations":
            if "observation" not in grants:
                raise SubscriptionRefused("subscribe: observations need the observation grant")
            if channels and tuple(channels) != plan.observation_channels:
                raise SubscriptionRefused("subscribe: observation channels differ from the plan")
        elif source == "cameras":
            if "camera" not in grants:
                raise SubscriptionRefused("subscribe: cameras need the camera grant")
            planned = {ch for cam in plan.cameras for ch in cam.channels().values()}
            if not set(channels) <= planned:
                raise SubscriptionRefused("subscribe: camera channels outside the capture plan")
        elif channels:
            raise SubscriptionRefused(f"subscribe: {source!r} takes no channels")
        if from_sequence < 1:
            raise SubscriptionRefused(f"subscribe: from_sequence must be >= 1 (got {from_sequence})")
        sub = Subscription(self._unsubscribe, source, sink)
        with self._source_locks[source]:
            with self._lock:
                if self.sealed:
                    raise SubscriptionRefused(f"subscribe: {source!r} after the terminal cut")
                if source in _CONTROL and self.control_started:
                    raise SubscriptionRefused(f"subscribe: {source!r} after control producers started")
                if not self.history_open and from_sequence <= self.global_sequence:
                    raise SubscriptionRefused(f"subscribe: history of {source!r} is closed")
                self.subscribe_calls.append((source, from_sequence, channels))
                self.subscribe_blocks.append((source, max_block))
                self._accepts[id(sub)] = max_block
                replay = [e for e in self.history[source] if e.global_sequence >= from_sequence]
                block = None
                if source == "observations" and self._block is not None and max_block == 1:  # back to ticks
                    block = self._take_block()
                    self._block = None
            self._deliver_block(block)
            for envelope in replay:
                self._deliver(sub, envelope)
            self.subscribers[source].append(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._source_locks[sub.stream]:
            if sub.closed:
                return
            sub.closed = True
            self.subscribers[sub.stream].remove(sub)

    def sim_time_ns(self) -> int:
        """Simulation time of the current tick."""
        return round(self.tick * 1e9 / self.sensor_hz)

    def _publish(
        self, source: str, kind: SourceKind, payload: object, size: int | None, key: str | None = None
    ) -> Envelope | None:
        if not self.plan.captures(source):
            return None
        key = key or source  # the per-source sequence key (``cameras.<alias>.<role>``)
        with self._blocking(), self._source_locks[source]:
            with self._lock:
                block = self._take_block()  # BK2: the pending block goes first
                seq = self._allocate(source, key)
                if isinstance(payload, ObservationTick):
                    payload = ObservationTick(seq, payload.samples)
                envelope = Envelope(
                    self.global_sequence, kind, self.generation, self.tick,
                    self.sim_time_ns(), payload, size, seq,
                )
                if self.history_open:
                    self.history[source].append(envelope)
            self._deliver_block(block)
            held = self.held.get(source)
            if held is not None:
                held.append(envelope)
                return envelope
            for sub in list(self.subscribers[source]):
                self._deliver(sub, envelope)
        return envelope

    def _allocate(self, source: str, key: str) -> int:
        """The next global sequence and ``key``'s next sequence (under ``_lock``; rule 1)."""
        if self.sealed:
            raise TerminalError(f"publish on {source!r} after the terminal cut")
        self.global_sequence += 1
        seq = self.source_sequences[key] = self.source_sequences.get(key, 0) + 1
        return seq

    def _deliver(self, sub: Subscription, envelope: Envelope) -> None:
        if not sub.closed:
            sub.sink(envelope)

    def publish(
        self, source: str, payload: Mapping[str, object], *, portable_size: int | None = -1
    ) -> Envelope | None:
        """Publish a lifecycle/events/control item; ``portable_size=-1`` computes it."""
        frozen = freeze(payload)
        size = portable_size
        if size == -1:
            size = _portable_size(frozen) if self.portable_sizes else None
        return self._publish(source, KINDS[source], frozen, size)

    def publish_tick(self, values: Mapping[str, object] | None = None) -> Envelope | None:
        """Advance one tick and publish one observation tick of the plan's channels
        (``None`` when the tick waits in a pending block)."""
        self.tick += 1
        names = self.plan.observation_channels
        if not names:
            return None
        if values is None:
            values = self.sample_values()
        pending = self._block
        row = pending.row(values) if pending is not None else None
        if row is not None and self._pend(row):
            return None
        layout = self._packing
        row = pack_row(names, layout, values) if layout is not None else None
        if layout is not None and row is not None:
            packed = SampleBlock(names, PackedValues(np.frombuffer(row, np.uint8), layout), self.tick)
            return self._publish("observations", SourceKind.OBSERVATION, ObservationTick(0, packed), None)
        samples = tuple(ChannelSample(n, _frozen(values[n]), self.tick) for n in names)
        return self._publish("observations", SourceKind.OBSERVATION, ObservationTick(0, samples), None)

    def publish_camera(
        self, channel: str, value: object, calibration_digest: str, profile: Profile = None
    ) -> Envelope | None:
        """One sample of a planned camera channel in the current tick (its own sequence)."""
        for camera in self.plan.cameras:
            for role, name in camera.channels().items():
                if name == channel:
                    key = f"cameras.{camera.alias}.{role}"
                    with self._lock:
                        channel_seq = self.source_sequences.get(key, 0) + 1
                    sample = CameraSample(
                        camera.alias, channel, role, _frozen(value), calibration_digest,
                        channel_seq, freeze(profile) if profile is not None else None,
                    )
                    return self._publish("cameras", SourceKind.CAMERA, sample, None, key)
        raise KeyError(f"camera channel {channel!r} is not in the capture plan")

    def publish_render(self, source: str, payload: Mapping[str, object]) -> Envelope | None:
        """One render-side item (``render.state``, ``geometry``, ``fluid.emissions``) as a
        read-only mapping in the current tick; ``None`` when the plan does not capture it."""
        return self._publish(source, KINDS[source], MappingProxyType(dict(payload)), 256)

    def sample_values(self) -> dict[str, np.ndarray]:
        """Deterministic values for every numeric channel at the current tick."""
        return {
            c.name: np.full(c.shape, self.tick + i / 1000, dtype=c.dtype)
            for i, c in enumerate(self.channels) if c.kind == "numeric"
        }

    def reset(self, reason: str = "reset") -> None:
        """A new Runtime generation: the barrier, then ``generation.started``."""
        with self._lock:
            previous = self.generation
            self.generation += 1
        self._publish(
            "observations", SourceKind.GENERATION_BARRIER,
            GenerationBarrier(self.generation, previous, reason), None,
        )
        self.publish("lifecycle", {
            "event": "generation.started", "generation": self.generation,
            "previous": previous, "reason": reason,
        })

    def start_producers(self) -> None:
        """The prepare boundary: history closes and control producers start; blocks from
        here on when every observations subscription opted in (module doc)."""
        with self._lock:
            self.history_open = False
            self.control_started = True
            for items in self.history.values():
                items.clear()
            live = [self._accepts.get(id(sub), 1) for sub in self.subscribers["observations"] if not sub.closed]
            k = min([self.max_block, *live]) if live else 1
            layout = packed_layout(self.channels, self.plan.observation_channels)
            self._packing = layout if self.packed_ticks else None
            if layout is not None and k > 1:
                self._block = PendingBlock(self.plan.observation_channels, layout, k)

    @property
    def block_size(self) -> int:
        """``k`` of the Run's blocks (0: it stamps per tick)."""
        return 0 if self._block is None else self._block.size

    def _pend(self, row: bytes) -> bool:
        """BK1: the tick's sequences now, its row into the pending block; BK4 at ``k`` ticks.
        False (nothing stamped) once the Run went back to per-tick stamping."""
        with self._source_locks["observations"]:
            with self._lock:
                pending = self._block
                if pending is None:
                    return False
                seq = self._allocate("observations", "observations")
                full = pending.add(row, self.global_sequence, seq, self.generation, self.tick, self.sim_time_ns())
                block = self._take_block() if full else None
            self._deliver_block(block)
        return True

    def _take_block(self) -> Envelope | None:
        """The pending block as one stamped envelope, or ``None`` (under ``_lock``)."""
        block = None if self._block is None else self._block.take()
        self.blocks_stamped += block is not None
        return block

    def _deliver_block(self, block: Envelope | None) -> None:
        """Deliver a taken block to the observation subscribers (or hold it), in order."""
        if block is None:
            return
        held = self.held.get("observations")
        if held is not None:
            held.append(block)
            return
        for sub in list(self.subscribers["observations"]):
            self._deliver(sub, block)

    def _blocking(self) -> contextlib.AbstractContextManager[object]:
        """The observations source lock while blocks are stamped: a flush delivers in order."""
        return self._source_locks["observations"] if self._block is not None else contextlib.nullcontext()

    def flush(self) -> None:
        """Deliver the pending block now (BK5: the flow calls it before waiting)."""
        with self._blocking():
            with self._lock:
                block = self._take_block()
            self._deliver_block(block)

    def hold_delivery(self, source: str) -> None:
        """Sequence but do not deliver ``source`` items until ``release_delivery``."""
        with self._source_locks[source]:
            self.held.setdefault(source, [])

    def release_delivery(self, source: str) -> None:
        """Deliver the held items of ``source`` (late, so out of global order), then go live."""
        with self._source_locks[source]:
            for envelope in self.held.pop(source, []):
                for sub in list(self.subscribers[source]):
                    self._deliver(sub, envelope)

    def deliver_raw(self, source: str, item: object) -> None:
        """Hand subscribers an arbitrary object (a contract violation) without sequencing it."""
        with self._source_locks[source]:
            for sub in list(self.subscribers[source]):
                sub.sink(item)


def _frozen(value: object) -> np.ndarray:
    return readonly(np.array(value, copy=True))
