"""The fake Core's capture bus: sequencing, history, subscriptions and publishing.

``FakeBus`` is a mixin of :class:`fastsim_record.testing.fake_core.FakeCore` (which
holds the state); rules 1-5 of that module's table live here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from fastsim_contract.errors import SubscriptionRefused, TerminalError
from fastsim_contract.harness import Profile
from fastsim_contract.payloads import freeze
from fastsim_contract.payloads import portable_size as _portable_size
from fastsim_contract.protocols import SinkSubscription as Subscription
from fastsim_contract.values import (
    CameraSample,
    ChannelSample,
    Envelope,
    GenerationBarrier,
    ObservationTick,
    SourceKind,
)
from fastsim_record.testing.fake_state import FakeState
from fastsim_recording_format.encoding import readonly

if TYPE_CHECKING:
    from fastsim_record.testing.fake_services import FakeServices

__all__ = ["KINDS", "MANDATORY_SOURCES", "FakeBus", "InjectedFault", "Subscription"]

MANDATORY_SOURCES = ("lifecycle", "events", "control.audit", "control.result")
#: Every source the fake Core can sequence, by name: the contract's source kinds (a
#: generation barrier travels on the observations source, as in the embedded host).
KINDS = {kind.value: kind for kind in SourceKind if kind is not SourceKind.GENERATION_BARRIER}
_CONTROL = ("control.audit", "control.result")


class InjectedFault(RuntimeError):
    """An error raised on purpose by a fake."""


class FakeBus(FakeState):
    """Sequencing and delivery of the fake Core (a mixin; the state is ``FakeCore``'s)."""

    def _fault(self, step: str) -> None:
        if step in self.prepare_faults:
            raise InjectedFault(f"injected fault at {step}")

    def _subscribe(
        self, view: FakeServices, source: str, sink: Any, from_sequence: int, channels: tuple[str, ...]
    ) -> Subscription:
        self._fault(f"subscribe:{source}")
        if source not in KINDS:
            raise SubscriptionRefused(f"subscribe: unknown source {source!r}")
        plan = self.plan
        if not plan.captures(source):
            raise SubscriptionRefused(f"subscribe: source {source!r} is not in the capture plan")
        if source == "observations":
            if "observation" not in view.grants:
                raise SubscriptionRefused("subscribe: observations need the observation grant")
            if channels and tuple(channels) != plan.observation_channels:
                raise SubscriptionRefused("subscribe: observation channels differ from the plan")
        elif source == "cameras":
            if "camera" not in view.grants:
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
                replay = [e for e in self.history[source] if e.global_sequence >= from_sequence]
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
        with self._source_locks[source]:
            with self._lock:
                seq = self._allocate(source, key)
                if isinstance(payload, ObservationTick):
                    payload = ObservationTick(seq, payload.samples)
                envelope = Envelope(
                    self.global_sequence, kind, self.generation, self.tick,
                    self.sim_time_ns(), payload, size, seq,
                )
                if self.history_open:
                    self.history[source].append(envelope)
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
        """Advance one tick and publish one observation tick of the plan's channels."""
        self.tick += 1
        names = self.plan.observation_channels
        if not names:
            return None
        if values is None:
            values = self.sample_values()
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
        """The prepare boundary: history closes and control producers start."""
        with self._lock:
            self.history_open = False
            self.control_started = True
            for items in self.history.values():
                items.clear()

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
