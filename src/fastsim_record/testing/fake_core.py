"""A scriptable in-process Core: sources with history, completion, finalizers, outputs.

Tests drive it from one or more "simulation" threads::

    core = FakeCore(channels=[...])
    plugin = create_plugin(core.context(config))
    plugin.prepare(); plugin.start()
    core.publish("lifecycle", {"event": "start"})
    core.publish_tick({"robot.q": array})      # one atomic observation tick
    core.reset()                               # new Runtime generation + barrier
    results = core.terminate(CompletionKind.NORMAL)

Semantics (the Core contract, as far as Record relies on it):

    | # | rule                                                                       |
    |---|----------------------------------------------------------------------------|
    | 1 | one contiguous global sequence from 1 over the recorded sources            |
    | 2 | per-source order is preserved; different sources may arrive out of order   |
    | 3 | subscribe replays history from ``from_sequence`` then goes live, atomically|
    | 4 | observation ticks carry only the subscription's channels; barriers share   |
    |   | the observation ``capture_sequence``                                       |
    | 5 | the first completion request wins; later ones return False                 |
    | 6 | finalizers run with an absolute deadline; on expiry ``cancel`` is called   |
    | 7 | a required finalizer's failure fails the run even after a normal completion|

Faults: ``prepare_faults`` names steps that raise (``subscribe:<source>``,
``request_grant``, ``register_finalizer``); ``output.faults`` is the output service's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence

import attrs
import numpy as np

from fastsim_contract.protocols import Finalizer
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    ChannelSample,
    CompletionKind,
    CompletionRequest,
    Envelope,
    FinalizerRegistrationRequest,
    FinalizerResult,
    GenerationBarrier,
    ObservationTick,
    SourceKind,
    TerminalSemanticCut,
)
from fastsim_record.testing.fake_output import FakeOutputService

__all__ = [
    "FakeCore",
    "FakeOutputPolicy",
    "FakePluginContext",
    "FakeRunContext",
    "InjectedFault",
    "numeric_channels",
]

_CRITICAL_SOURCES = ("lifecycle", "events", "control.audit", "control.result")


class InjectedFault(RuntimeError):
    """An error raised on purpose by a fake."""


@attrs.frozen
class FakeOutputPolicy:
    """``RunOutputPolicy``."""

    integrity: str = "none"
    preserve_incomplete: bool = True
    publish_incomplete: bool = False


@attrs.frozen
class FakeRunContext:
    """Run identity, timing and the scene's declared channels."""

    run_id: str = "run-1"
    completion_id: str = "completion-1"
    sensor_hz: float = 120.0
    rate_policy: str = "exact"
    physics_hz: float = 480.0
    output_policy: FakeOutputPolicy = attrs.field(factory=FakeOutputPolicy)
    channels: tuple[ChannelDescriptor, ...] = ()
    services: frozenset[str] = frozenset()
    capture: CapturePlan = attrs.field(factory=lambda: CapturePlan(frozenset()))
    generation: int = 0
    tick: int = 0
    sim_time_ns: int = 0


@attrs.frozen
class FakePluginContext:
    """What the host hands the plugin factory."""

    component_id: str
    config: object
    core: FakeCore


def numeric_channels(count: int, width: int = 7) -> tuple[ChannelDescriptor, ...]:
    """``count`` float64 vector channels named ``robot.c<i>`` of ``width`` elements."""
    return tuple(
        ChannelDescriptor(f"robot.c{i:03d}", "numeric", "float64", (width,), ("rad",) * width, "robot")
        for i in range(count)
    )


@attrs.define(eq=False)
class _Sub:
    source: str
    sink: object
    channels: tuple[str, ...]
    closed: bool = False

    def close(self) -> None:
        self.closed = True


@attrs.define(eq=False)
class _Registration:
    core: FakeCore
    request: FinalizerRegistrationRequest
    finalizer: Finalizer
    active: bool = True

    def unregister(self) -> None:
        self.active = False


@attrs.define(eq=False)
class FakeCore:
    """The fake Core; ``record_observations`` says whether ticks are sequenced."""

    channels: Sequence[ChannelDescriptor] = ()
    record_observations: bool | None = None
    output_policy: FakeOutputPolicy = attrs.field(factory=FakeOutputPolicy)
    sensor_hz: float = 120.0
    prepare_faults: set[str] = attrs.field(factory=set)
    outputs: FakeOutputService = attrs.field(factory=FakeOutputService)
    services: frozenset[str] = frozenset()
    # state
    generation: int = 0
    tick: int = 0
    global_sequence: int = 0
    source_sequences: dict[str, int] = attrs.field(factory=dict)
    history: dict[str, list[Envelope]] = attrs.field(factory=dict)
    subscribers: dict[str, list[_Sub]] = attrs.field(factory=dict)
    subscribe_calls: list[tuple[str, int, tuple[str, ...]]] = attrs.field(factory=list)
    grants: list[str] = attrs.field(factory=list)
    registrations: list[_Registration] = attrs.field(factory=list)
    completions: list[CompletionRequest] = attrs.field(factory=list)
    winner: CompletionRequest | None = None
    results: list[FinalizerResult] = attrs.field(factory=list)
    held: dict[str, list[Envelope]] = attrs.field(factory=dict)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _source_locks: dict[str, threading.RLock] = attrs.field(factory=dict)
    _completed: threading.Event = attrs.field(factory=threading.Event)

    def __attrs_post_init__(self) -> None:
        if self.record_observations is None:
            self.record_observations = any(c.kind == "numeric" for c in self.channels)
        for name in (*_CRITICAL_SOURCES, "observations"):
            self._source_locks[name] = threading.RLock()
            self.history[name] = []
            self.subscribers[name] = []

    # -- CoreServices -----------------------------------------------------------------
    @property
    def run(self) -> FakeRunContext:
        """The run context."""
        observed = tuple(c.name for c in self.channels if c.kind == "numeric")
        sources = set(_CRITICAL_SOURCES)
        if self.record_observations:
            sources.add("observations")
        plan = CapturePlan(
            frozenset(sources), observed if self.record_observations else ()
        )
        return FakeRunContext(
            sensor_hz=self.sensor_hz, output_policy=self.output_policy,
            channels=tuple(self.channels), services=self.services, capture=plan,
            generation=self.generation, tick=self.tick, sim_time_ns=self.sim_time_ns(),
        )

    def context(self, config: object, component_id: str = "record") -> FakePluginContext:
        """A plugin context for ``config`` bound to this core."""
        return FakePluginContext(component_id, config, self)

    def subscribe(
        self, source: str, sink: object, *, from_sequence: int = 1, channels: Sequence[str] = ()
    ) -> _Sub:
        """Atomic history-plus-live subscription (rule 3)."""
        self._fault(f"subscribe:{source}")
        if source not in self.subscribers:
            raise KeyError(f"unknown source {source!r}")
        sub = _Sub(source, sink, tuple(channels))
        with self._source_locks[source]:
            self.subscribe_calls.append((source, from_sequence, tuple(channels)))
            for envelope in self.history[source]:
                if envelope.global_sequence >= from_sequence:
                    self._deliver(sub, envelope)
            self.subscribers[source].append(sub)
        return sub

    def request_grant(self, grant: str) -> None:
        """Record a grant request."""
        self._fault("request_grant")
        self.grants.append(grant)

    def register_finalizer(
        self, request: FinalizerRegistrationRequest, finalizer: Finalizer
    ) -> _Registration:
        """Register a finalizer for the terminal coordinator."""
        self._fault("register_finalizer")
        if not isinstance(request, FinalizerRegistrationRequest):
            raise TypeError("register_finalizer takes a FinalizerRegistrationRequest")
        registration = _Registration(self, request, finalizer)
        self.registrations.append(registration)
        return registration

    def request_completion(self, request: CompletionRequest) -> bool:
        """First completion request wins (rule 5)."""
        with self._lock:
            self.completions.append(request)
            if self.winner is not None:
                return False
            self.winner = request
        self._completed.set()
        return True

    # -- driving the run --------------------------------------------------------------
    def _fault(self, step: str) -> None:
        if step in self.prepare_faults:
            raise InjectedFault(f"injected fault at {step}")

    def _allocate(self, source: str, kind: SourceKind, payload: object, size: int | None) -> Envelope:
        with self._lock:
            self.global_sequence += 1
            seq = self.source_sequences.get(source, 0) + 1
            self.source_sequences[source] = seq
            if isinstance(payload, ObservationTick):
                payload = ObservationTick(seq, payload.samples)
            envelope = Envelope(
                self.global_sequence, kind, self.generation, self.tick,
                self.sim_time_ns(), payload, size, seq,
            )
            self.history[source].append(envelope)
            return envelope

    def sim_time_ns(self) -> int:
        """Simulation time of the current tick."""
        return round(self.tick * 1e9 / self.sensor_hz)

    def _deliver(self, sub: _Sub, envelope: Envelope) -> None:
        if sub.closed:
            return
        payload = envelope.payload
        if isinstance(payload, ObservationTick) and sub.channels:
            wanted = set(sub.channels)
            envelope = attrs.evolve(
                envelope,
                payload=ObservationTick(
                    payload.capture_sequence,
                    tuple(s for s in payload.samples if s.channel in wanted),
                ),
            )
        sub.sink(envelope)  # type: ignore[operator]

    def _publish(self, source: str, kind: SourceKind, payload: object, size: int | None) -> Envelope:
        with self._source_locks[source]:
            envelope = self._allocate(source, kind, payload, size)
            held = self.held.get(source)
            if held is not None:
                held.append(envelope)
                return envelope
            for sub in list(self.subscribers[source]):
                self._deliver(sub, envelope)
        return envelope

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

    def publish(
        self, source: str, payload: Mapping[str, object], *, portable_size: int | None = -1
    ) -> Envelope:
        """Publish a lifecycle/events/control item; ``portable_size=-1`` computes it, None omits it."""
        kind = {
            "lifecycle": SourceKind.LIFECYCLE, "events": SourceKind.PLUGIN_EVENT,
            "control.audit": SourceKind.CONTROL_AUDIT, "control.result": SourceKind.CONTROL_RESULT,
        }[source]
        size = len(repr(payload)) + 16 if portable_size == -1 else portable_size
        return self._publish(source, kind, dict(payload), size)

    def publish_tick(self, values: Mapping[str, np.ndarray] | None = None) -> Envelope | None:
        """Advance one tick and publish one observation tick of every numeric channel."""
        self.tick += 1
        if not self.record_observations:
            return None
        if values is None:
            values = self.sample_values()
        samples = tuple(
            ChannelSample(name, _frozen(value), self.tick) for name, value in values.items()
        )
        return self._publish("observations", SourceKind.OBSERVATION, ObservationTick(0, samples), None)

    def sample_values(self) -> dict[str, np.ndarray]:
        """Deterministic values for every numeric channel at the current tick."""
        out: dict[str, np.ndarray] = {}
        for i, channel in enumerate(self.channels):
            if channel.kind == "numeric":
                out[channel.name] = np.full(channel.shape, self.tick + i / 1000, dtype=channel.dtype)
        return out

    def reset(self) -> None:
        """Start a new Runtime generation: a lifecycle item and an observation barrier."""
        with self._lock:
            self.generation += 1
        self.publish("lifecycle", {"event": "reset", "generation": self.generation})
        if self.record_observations:
            self._publish(
                "observations", SourceKind.GENERATION_BARRIER,
                GenerationBarrier(self.generation, self.generation - 1), None,
            )

    def deliver_raw(self, source: str, item: object) -> None:
        """Hand subscribers an arbitrary object (a contract violation) without sequencing it."""
        for sub in list(self.subscribers[source]):
            sub.sink(item)  # type: ignore[operator]

    def wait_completion(self, timeout: float) -> CompletionRequest | None:
        """Wait until some completion request won."""
        self._completed.wait(timeout)
        return self.winner

    def cut(self) -> TerminalSemanticCut:
        """The terminal semantic cut of everything published so far."""
        if self.winner is None:
            raise RuntimeError("cut before any completion request")
        with self._lock:
            finals = {s: self.source_sequences.get(s, 0) for s in self.history}
            return TerminalSemanticCut(self.global_sequence, finals, self.winner, self.generation)

    def terminate(
        self,
        kind: CompletionKind = CompletionKind.NORMAL,
        reason: str = "done",
        *,
        timeout_s: float | None = None,
    ) -> list[FinalizerResult]:
        """Request completion (host side), cut, and run every registered finalizer (rule 6)."""
        self.request_completion(CompletionRequest(kind, reason, "host"))
        cut = self.cut()
        results: list[FinalizerResult] = []
        for registration in self.registrations:
            if not registration.active:
                continue
            budget = registration.request.requested_timeout_s if timeout_s is None else timeout_s
            results.append(self._run_finalizer(registration, cut, budget))
        self.results.extend(results)
        return results

    def _run_finalizer(
        self, registration: _Registration, cut: TerminalSemanticCut, budget: float
    ) -> FinalizerResult:
        deadline = time.monotonic() + budget
        box: list[FinalizerResult | BaseException] = []

        def call() -> None:
            try:
                box.append(registration.finalizer.finalize(cut, deadline))
            except BaseException as exc:  # reported as a failed result
                box.append(exc)

        thread = threading.Thread(target=call, name="fake-core-finalizer", daemon=True)
        thread.start()
        thread.join(max(0.0, deadline - time.monotonic()))
        component = registration.request.component
        if not box:
            registration.finalizer.cancel()
            return FinalizerResult(component, False, "finalizer deadline expired")
        outcome = box[0]
        if isinstance(outcome, BaseException):
            return FinalizerResult(component, False, f"finalizer raised {outcome!r}")
        return outcome

    def run_failed(self) -> bool:
        """The run outcome after terminate: a required failed finalizer wins (rule 7)."""
        required = {r.request.component for r in self.registrations if r.request.required}
        if any(not r.ok and r.component in required for r in self.results):
            return True
        return self.winner is not None and self.winner.kind is not CompletionKind.NORMAL


def _frozen(value: np.ndarray) -> np.ndarray:
    array = np.array(value, copy=True)
    array.setflags(write=False)
    return array


def all_sources() -> Iterable[str]:
    """Every source name the fake knows."""
    return (*_CRITICAL_SOURCES, "observations")
