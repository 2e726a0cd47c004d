"""A scriptable in-process Core: capture plan, sources with history, grants, the
terminal coordinator and the output service, with fault injection.

Tests drive it from one or more "simulation" threads::

    core = FakeCore(channels=[...])            # plan: mandatory sources + numeric channels
    plugin = create_plugin(core.context(config))
    plugin.prepare(); plugin.start(); core.start_producers()
    core.publish("lifecycle", {"event": "x"})
    core.publish_tick()                        # one atomic observation tick
    core.reset()                               # barrier, then generation.started
    results = core.terminate(CompletionKind.NORMAL)

Semantics (``contracts/core-contract.md``; this fake passes the contract suite):

    | # | rule                                                                        |
    |---|-----------------------------------------------------------------------------|
    | 1 | one contiguous global sequence from 1, only over sources in the capture plan|
    | 2 | per-source order is kept; different sources may arrive out of order (the    |
    |   | global lock only allocates; delivery happens under the source's lock)       |
    | 3 | subscribe replays history from ``from_sequence`` then goes live, atomically;|
    |   | refused: unknown/unplanned source, observations without the grant or with  |
    |   | other channels, control after producers start, closed history, after cut   |
    | 4 | ticks carry the plan's channels in plan order; barriers share the           |
    |   | observation ``capture_sequence``                                            |
    | 5 | payloads are deep read-only; lifecycle/events/control carry the canonical   |
    |   | JSON byte length as ``portable_size`` (unless ``portable_sizes=False``)     |
    | 6 | the first completion request wins; the cut seals publishing                 |
    | 7 | finalizers run concurrently to an absolute deadline; late ones are         |
    |   | cancelled and their leases revoked; a required failure fails the Run        |
    | 8 | flow control (contract section 10): ``end_tick()`` of an unpaced tick waits |
    |   | while a registered gauge is pressed, at most ``flow_stall_s`` per gauge,   |
    |   | then releases it; ``end_tick(paced=True)`` never reads a gauge              |

Faults: ``prepare_faults`` names steps that raise ``InjectedFault``
(``subscribe:<source>``, ``request_grant``, ``register_finalizer``);
``outputs.faults`` are the output service's; ``hold_delivery`` delays a source.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs
import numpy as np

from fastsim_contract.errors import GrantRefused, SubscriptionRefused, TerminalError
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.payloads import FrozenDict, freeze
from fastsim_contract.payloads import portable_size as _portable_size
from fastsim_contract.protocols import Finalizer, FlowGauge
from fastsim_contract.values import (
    CameraSample,
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
from fastsim_record.testing.fake_output import FakeOutputService, FakeOutputView

__all__ = [
    "MANDATORY_SOURCES",
    "FakeCore",
    "FakeOutputPolicy",
    "FakePluginContext",
    "FakeRunContext",
    "FakeServices",
    "FrozenDict",
    "InjectedFault",
    "freeze",
    "numeric_channels",
]

MANDATORY_SOURCES = ("lifecycle", "events", "control.audit", "control.result")
_KINDS = {
    "lifecycle": SourceKind.LIFECYCLE,
    "events": SourceKind.PLUGIN_EVENT,
    "control.audit": SourceKind.CONTROL_AUDIT,
    "control.result": SourceKind.CONTROL_RESULT,
    "observations": SourceKind.OBSERVATION,
    "cameras": SourceKind.CAMERA,
    "render.state": SourceKind.RENDER_STATE,
    "geometry": SourceKind.GEOMETRY,
    "fluid.emissions": SourceKind.FLUID_EMISSION,
}
_CONTROL = ("control.audit", "control.result")


class InjectedFault(RuntimeError):
    """An error raised on purpose by a fake."""


#: The fake Core's output policy is Core's one ``RunOutputPolicy`` (an old name).
FakeOutputPolicy = RunOutputPolicy


@attrs.frozen
class FakeRunContext:
    """Run identity, timing, the declared channels and the capture plan (a snapshot)."""

    run_id: str = "run-1"
    completion_id: str = "completion-1"
    sensor_hz: float = 120.0
    rate_policy: str = "exact"
    physics_hz: float = 480.0
    output_policy: RunOutputPolicy = attrs.field(factory=RunOutputPolicy)
    channels: tuple[ChannelDescriptor, ...] = ()
    services: frozenset[str] = frozenset()
    capture: CapturePlan = attrs.field(factory=lambda: CapturePlan(frozenset(MANDATORY_SOURCES)))
    generation: int = 0
    tick: int = 0
    sim_time_ns: int = 0


@attrs.frozen
class FakePluginContext:
    """What the host hands the plugin factory."""

    component_id: str
    config: object
    core: FakeServices


def numeric_channels(count: int, width: int = 7) -> tuple[ChannelDescriptor, ...]:
    """``count`` float64 vector channels named ``robot.c<i>`` of ``width`` elements."""
    return tuple(
        ChannelDescriptor(f"robot.c{i:03d}", "numeric", "float64", (width,), ("rad",) * width, "robot")
        for i in range(count)
    )


def default_plan(channels: Sequence[ChannelDescriptor]) -> CapturePlan:
    """Mandatory sources, plus observations of every numeric channel if there are any."""
    numeric = tuple(c.name for c in channels if c.kind == "numeric")
    sources = set(MANDATORY_SOURCES) | ({"observations"} if numeric else set())
    return CapturePlan(frozenset(sources), numeric)


@attrs.define(eq=False)
class _Sub:
    core: FakeCore
    source: str
    sink: Any
    closed: bool = False

    def close(self) -> None:
        self.core._unsubscribe(self)


@attrs.define(eq=False)
class _Registration:
    core: FakeCore
    request: FinalizerRegistrationRequest
    finalizer: Finalizer
    active: bool = True
    timed_out: bool = False

    def unregister(self) -> None:
        if self.core.sealed and self.active:
            raise TerminalError("unregister after the terminal cut")
        self.active = False


@attrs.define(eq=False)
class _Gauge:
    core: FakeCore
    gauge: FlowGauge

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.core.flow_gauges.remove(self)


@attrs.define(eq=False)
class FakeServices:
    """``CoreServices`` for one component."""

    core: FakeCore
    component: str
    grants: set[str] = attrs.field(factory=set)

    @property
    def run(self) -> FakeRunContext:
        """The run context."""
        return self.core.run

    @property
    def outputs(self) -> FakeOutputView:
        """The output service, as this component sees it."""
        return self.core.outputs.view(self.component)

    def subscribe(
        self, source: str, sink: Any, *, from_sequence: int = 1, channels: Sequence[str] = ()
    ) -> _Sub:
        """Atomic history-plus-live subscription (rule 3)."""
        return self.core._subscribe(self, source, sink, from_sequence, tuple(channels))

    def request_grant(self, grant: str) -> None:
        """A capability grant justified by the plan."""
        self.core._grant(self, grant)

    def register_finalizer(
        self, request: FinalizerRegistrationRequest, finalizer: Finalizer
    ) -> _Registration:
        """Register a finalizer (refused after the cut)."""
        return self.core._register(request, finalizer)

    def request_completion(self, request: CompletionRequest) -> bool:
        """First completion request wins (rule 6)."""
        return self.core.request_completion(request)

    def register_flow_gauge(self, gauge: FlowGauge) -> _Gauge:
        """Rule 8: wait on ``gauge`` after unpaced ticks (refused after the cut)."""
        if self.core.sealed:
            raise TerminalError("register_flow_gauge after the terminal cut")
        registration = _Gauge(self.core, gauge)
        self.core.flow_gauges.append(registration)
        return registration


@attrs.define(eq=False)
class FakeCore:
    """The fake Core of one Run."""

    channels: Sequence[ChannelDescriptor] = ()
    capture: CapturePlan | None = None
    output_policy: RunOutputPolicy = attrs.field(factory=RunOutputPolicy)
    sensor_hz: float = 120.0
    prepare_faults: set[str] = attrs.field(factory=set)
    outputs: FakeOutputService = attrs.field(factory=FakeOutputService)
    services: frozenset[str] = frozenset()
    portable_sizes: bool = True
    max_finalizer_timeout_s: float = 300.0
    flow_stall_s: float = 5.0
    run_id: str = "run-1"
    completion_id: str = "completion-1"
    # state
    generation: int = 0
    tick: int = 0
    global_sequence: int = 0
    sealed: bool = False
    history_open: bool = True
    control_started: bool = False
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
    final_cut: TerminalSemanticCut | None = None
    flow_gauges: list[_Gauge] = attrs.field(factory=list)
    flow_released: list[FlowGauge] = attrs.field(factory=list)
    flow_waits: int = 0  # ticks after which ``end_tick`` waited on a pressed gauge
    _views: dict[str, FakeServices] = attrs.field(factory=dict)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _source_locks: dict[str, threading.RLock] = attrs.field(factory=dict)
    _completed: threading.Event = attrs.field(factory=threading.Event)

    def __attrs_post_init__(self) -> None:
        if self.capture is None:
            self.capture = default_plan(self.channels)
        for name in _KINDS:
            self._source_locks[name] = threading.RLock()
            self.history[name] = []
            self.subscribers[name] = []
        self.outputs.integrity = self.output_policy.integrity
        self.outputs.preserve_incomplete = self.output_policy.preserve_incomplete
        self.outputs.publish_incomplete = self.output_policy.publish_incomplete
        self.outputs.completion_id = self.completion_id
        self.outputs.run_failed = self._run_failed

    def _run_failed(self) -> bool:
        winner = self.winner
        return winner is not None and winner.kind is CompletionKind.FAILED

    @property
    def plan(self) -> CapturePlan:
        """The compiled capture plan."""
        plan = self.capture
        if plan is None:  # pragma: no cover - set in __attrs_post_init__
            raise RuntimeError("no capture plan")
        return plan

    @property
    def run(self) -> FakeRunContext:
        """A snapshot of the run context."""
        return FakeRunContext(
            run_id=self.run_id, completion_id=self.completion_id, sensor_hz=self.sensor_hz,
            output_policy=self.output_policy, channels=tuple(self.channels),
            services=self.services, capture=self.plan, generation=self.generation,
            tick=self.tick, sim_time_ns=self.sim_time_ns(),
        )

    def services_for(self, component: str) -> FakeServices:
        """The ``CoreServices`` of ``component``."""
        view = self._views.get(component)
        if view is None:
            view = self._views[component] = FakeServices(self, component)
        return view

    def context(self, config: object, component_id: str = "record") -> FakePluginContext:
        """A plugin context for ``config``."""
        return FakePluginContext(component_id, config, self.services_for(component_id))

    def request_completion(self, request: CompletionRequest) -> bool:
        """First completion request wins (rule 6)."""
        with self._lock:
            self.completions.append(request)
            if self.winner is not None or self.sealed:
                return False
            self.winner = request
        self._completed.set()
        return True

    # -- CoreServices internals -------------------------------------------------------
    def _fault(self, step: str) -> None:
        if step in self.prepare_faults:
            raise InjectedFault(f"injected fault at {step}")

    def _subscribe(
        self, view: FakeServices, source: str, sink: Any, from_sequence: int, channels: tuple[str, ...]
    ) -> _Sub:
        self._fault(f"subscribe:{source}")
        if source not in _KINDS:
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
        sub = _Sub(self, source, sink)
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

    def _unsubscribe(self, sub: _Sub) -> None:
        with self._source_locks[sub.source]:
            if sub.closed:
                return
            sub.closed = True
            self.subscribers[sub.source].remove(sub)

    def _grant(self, view: FakeServices, grant: str) -> None:
        self._fault("request_grant")
        plan = self.plan
        justified = {
            "output.write_lease": True,
            "observation": bool(plan.observation_channels),
            "camera": bool(plan.cameras),
            "render.state": plan.render_state_hz is not None,
            "scene.geometry@2": plan.geometry_hz is not None,
        }
        if not justified.get(grant, False):
            raise GrantRefused(f"request_grant: {grant!r} is not justified by the capture plan")
        view.grants.add(grant)
        self.grants.append(grant)

    def _register(self, request: FinalizerRegistrationRequest, finalizer: Finalizer) -> _Registration:
        self._fault("register_finalizer")
        if not isinstance(request, FinalizerRegistrationRequest):
            raise TypeError("register_finalizer takes a FinalizerRegistrationRequest")
        with self._lock:
            if self.sealed:
                raise TerminalError("register_finalizer after the terminal cut")
            registration = _Registration(self, request, finalizer)
            self.registrations.append(registration)
        return registration

    # -- producers ----------------------------------------------------------------------
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
                if self.sealed:
                    raise TerminalError(f"publish on {source!r} after the terminal cut")
                self.global_sequence += 1
                seq = self.source_sequences.get(key, 0) + 1
                self.source_sequences[key] = seq
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

    def _deliver(self, sub: _Sub, envelope: Envelope) -> None:
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
        return self._publish(source, _KINDS[source], frozen, size)

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
        self,
        channel: str,
        value: object,
        calibration_digest: str,
        profile: Mapping[str, object] | None = None,
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
        return self._publish(source, _KINDS[source], MappingProxyType(dict(payload)), 256)

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

    def end_tick(self, *, paced: bool = False) -> float:
        """Rule 8: the end of a tick; the seconds spent waiting on pressed gauges."""
        if paced:
            return 0.0
        started = time.monotonic()
        for registration in list(self.flow_gauges):
            deadline = time.monotonic() + self.flow_stall_s
            if registration.gauge.pressed:
                self.flow_waits += 1
            while registration.gauge.pressed and not self._completed.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    registration.close()
                    self.flow_released.append(registration.gauge)
                    break
                registration.gauge.wait_relieved(min(0.05, remaining))
        return time.monotonic() - started

    # -- terminal -----------------------------------------------------------------------
    def wait_completion(self, timeout: float) -> CompletionRequest | None:
        """Wait until some completion request won."""
        self._completed.wait(timeout)
        return self.winner

    def take_cut(self) -> TerminalSemanticCut:
        """Seal publishing and return the exact cut (a NORMAL completion if none won)."""
        if self.final_cut is not None:
            return self.final_cut
        if self.winner is None:
            self.request_completion(CompletionRequest(CompletionKind.NORMAL, "run ended", "host"))
        winner = self.winner
        if winner is None:  # pragma: no cover - set just above
            raise RuntimeError("no completion")
        self.publish("lifecycle", {
            "event": "run.stopping", "completion": winner.kind.value, "reason": winner.reason,
        })
        with self._lock:
            self.sealed = True
            self.flow_gauges.clear()
            finals = FrozenDict(dict(self.source_sequences))
            self.final_cut = TerminalSemanticCut(self.global_sequence, finals, winner, self.generation)
        return self.final_cut

    def cut(self) -> TerminalSemanticCut:
        """The cut (taken once)."""
        return self.take_cut()

    def terminate(
        self,
        kind: CompletionKind = CompletionKind.NORMAL,
        reason: str = "done",
        *,
        timeout_s: float | None = None,
    ) -> list[FinalizerResult]:
        """Request completion (host side), cut, and run every finalizer (rule 7)."""
        self.request_completion(CompletionRequest(kind, reason, "host"))
        cut = self.take_cut()
        started = time.monotonic()
        runs: list[tuple[_Registration, float, threading.Thread, list[Any]]] = []
        for registration in self.registrations:
            if not registration.active:
                continue
            budget = min(registration.request.requested_timeout_s, self.max_finalizer_timeout_s)
            if timeout_s is not None:
                budget = timeout_s
            deadline = started + budget
            box: list[Any] = []
            thread = threading.Thread(
                target=_call, args=(registration.finalizer, cut, deadline, box),
                name=f"fake-finalizer-{registration.request.component}", daemon=True,
            )
            thread.start()
            runs.append((registration, deadline, thread, box))
        results: list[FinalizerResult] = []
        for registration, deadline, thread, box in runs:
            thread.join(max(0.0, deadline - time.monotonic()))
            component = registration.request.component
            if thread.is_alive() or not box:
                registration.finalizer.cancel()
                registration.timed_out = True
                self.outputs.revoke_open()
                results.append(FinalizerResult(component, False, "finalizer deadline expired; cancelled"))
            elif isinstance(box[0], BaseException):
                results.append(FinalizerResult(component, False, f"finalizer raised: {box[0]}"))
            else:
                results.append(box[0])
        self.results.extend(results)
        return results

    def status(self) -> tuple[str, str | None]:
        """The Run status: required-finalizer precedence, then the completion kind."""
        active = [r for r in self.registrations if r.active]
        for registration, result in zip(active, self.results):
            if registration.request.required and not result.ok:
                return "failed", f"{result.component}: {result.reason or 'failed'}"
        winner = self.winner
        if winner is None or winner.kind is CompletionKind.NORMAL:
            return "succeeded", None
        return winner.kind.value, winner.reason

    def run_failed(self) -> bool:
        """True when the Run's status is failed."""
        return self.status()[0] == "failed"


def _call(finalizer: Finalizer, cut: TerminalSemanticCut, deadline: float, box: list[Any]) -> None:
    try:
        box.append(finalizer.finalize(cut, deadline))
    except BaseException as exc:  # reported as the finalizer's failure
        box.append(exc)


def _frozen(value: object) -> np.ndarray:
    array = np.array(value, copy=True)
    array.setflags(write=False)
    return array
