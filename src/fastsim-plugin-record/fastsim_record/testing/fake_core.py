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
    | 6 | the first completion request wins; the cut seals publishing; a ``failed``   |
    |   | one refuses commits unless the Core side asked ``keep_recorded`` (FR1-FR3)  |
    | 7 | finalizers run concurrently to an absolute deadline; late ones are         |
    |   | cancelled and their leases revoked; a required failure fails the Run        |
    | 8 | flow control (contract section 10): ``end_tick()`` of an unpaced tick waits |
    |   | while a registered gauge is pressed, at most ``flow_stall_s`` per gauge,   |
    |   | then releases it; ``end_tick(paced=True)`` never reads a gauge              |
    | 9 | blocks (contract section 4, BK1-BK8): with ``max_block`` > 1 and every      |
    |   | observations subscription opted in at the boundary, ticks travel as        |
    |   | ``ObservationBlock`` values of at most that many ticks (``fake_bus`` doc);  |
    |   | ``packed_ticks``: per-tick ticks carry ``PackedValues`` (a packing backend) |

Faults: ``prepare_faults`` names steps that raise ``InjectedFault``
(``subscribe:<source>``, ``request_grant``, ``register_finalizer``);
``outputs.faults`` are the output service's; ``hold_delivery`` delays a source.

``FakeCore`` is composed of parts that each own their state and one job; it builds them,
orders the steps that span parts (the cut drops the flow gauges; ``terminate`` cuts,
then runs the finalizers) and exposes the state tests read as read-only attributes:

    | part                       | module            | owns                                 |
    |----------------------------|-------------------|--------------------------------------|
    | ``bus: FakeBus``           | ``fake_bus``      | sequences, history, subscriptions,   |
    |                            |                   | held deliveries, the seal (rules 1-5)|
    | ``granting: Grants``       | ``fake_services`` | grants given (contract section 5)    |
    | ``terminal: Terminal``     | ``fake_terminal`` | completion requests, winner, cut (6) |
    | ``finalizers: Finalizers`` | ``fake_terminal`` | registrations, results, status (7)   |
    | ``flow: Flow``             | ``fake_flow``     | gauges, released gauges, waits (8)   |
    | ``outputs``                | ``fake_output``   | the output service and its leases    |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar, overload

import attrs
import numpy as np

from fastsim_contract.harness import Profile
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.payloads import FrozenDict, freeze
from fastsim_contract.protocols import FlowGauge
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    CompletionKind,
    CompletionRequest,
    Envelope,
    FinalizerResult,
    TerminalSemanticCut,
)
from fastsim_record.testing.fake_bus import MANDATORY_SOURCES, FakeBus, InjectedFault, Subscription
from fastsim_record.testing.fake_flow import Flow, Gauge
from fastsim_record.testing.fake_output import FakeOutputService
from fastsim_record.testing.fake_services import FakeServices, Grants
from fastsim_record.testing.fake_terminal import Finalizers, Registration, Terminal

__all__ = [
    "MANDATORY_SOURCES",
    "FakeCore",
    "FakePluginContext",
    "FakeRunContext",
    "FakeServices",
    "FrozenDict",
    "InjectedFault",
    "freeze",
    "numeric_channels",
]


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


T = TypeVar("T")


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


class _Read(Generic[T]):
    """A read-only attribute of :class:`FakeCore` whose state one of its parts owns."""

    def __init__(self, read: Callable[[FakeCore], T]) -> None:
        self._read = read

    @overload
    def __get__(self, core: None, owner: type[FakeCore]) -> _Read[T]: ...
    @overload
    def __get__(self, core: FakeCore, owner: type[FakeCore] | None = None) -> T: ...
    def __get__(self, core: FakeCore | None, owner: type[FakeCore] | None = None) -> T | _Read[T]:
        return self if core is None else self._read(core)


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
    max_block: int = 1  # the fake's own bound on a block of ticks (1: never; rule 9)
    packed_ticks: bool = False  # per-tick ticks as PackedValues, as a packing backend's (rule 9)
    run_id: str = "run-1"
    completion_id: str = "completion-1"
    # the parts (built from the fields above)
    bus: FakeBus = attrs.field(init=False)
    granting: Grants = attrs.field(init=False)
    terminal: Terminal = attrs.field(init=False)
    finalizers: Finalizers = attrs.field(init=False)
    flow: Flow = attrs.field(init=False)
    _views: dict[str, FakeServices] = attrs.field(factory=dict, init=False)

    def __attrs_post_init__(self) -> None:
        if self.capture is None:
            self.capture = default_plan(self.channels)
        faults = self.prepare_faults
        self.bus = FakeBus(
            self.capture, self.channels, self.sensor_hz, self.portable_sizes, faults,
            max_block=self.max_block, packed_ticks=self.packed_ticks,
        )
        self.granting = Grants(self.capture, faults)
        self.terminal = Terminal(self.bus)
        self.finalizers = Finalizers(self.bus, self.outputs, faults, self.max_finalizer_timeout_s)
        self.flow = Flow(self.bus, self.flow_stall_s, self.terminal.completed.is_set)
        outputs = self.outputs
        outputs.integrity = self.output_policy.integrity
        outputs.preserve_incomplete = self.output_policy.preserve_incomplete
        outputs.publish_incomplete = self.output_policy.publish_incomplete
        outputs.completion_id = self.completion_id
        outputs.run_failed = self.terminal.failed

    # -- the Run ------------------------------------------------------------------------
    @property
    def plan(self) -> CapturePlan:
        """The compiled capture plan."""
        return self.bus.plan

    @property
    def run(self) -> FakeRunContext:
        """A snapshot of the run context."""
        bus = self.bus
        return FakeRunContext(
            run_id=self.run_id, completion_id=self.completion_id, sensor_hz=self.sensor_hz,
            output_policy=self.output_policy, channels=tuple(self.channels),
            services=self.services, capture=bus.plan, generation=bus.generation,
            tick=bus.tick, sim_time_ns=bus.sim_time_ns(),
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

    # -- producers (the bus) ------------------------------------------------------------
    def publish(
        self, source: str, payload: Mapping[str, object], *, portable_size: int | None = -1
    ) -> Envelope | None:
        """Publish a lifecycle/events/control item; ``portable_size=-1`` computes it."""
        return self.bus.publish(source, payload, portable_size=portable_size)

    def publish_tick(self, values: Mapping[str, object] | None = None) -> Envelope | None:
        """Advance one tick and publish one observation tick of the plan's channels."""
        return self.bus.publish_tick(values)

    def publish_camera(
        self, channel: str, value: object, calibration_digest: str, profile: Profile = None
    ) -> Envelope | None:
        """One sample of a planned camera channel in the current tick (its own sequence)."""
        return self.bus.publish_camera(channel, value, calibration_digest, profile)

    def publish_render(self, source: str, payload: Mapping[str, object]) -> Envelope | None:
        """One render-side item; ``None`` when the plan does not capture it."""
        return self.bus.publish_render(source, payload)

    def reset(self, reason: str = "reset") -> None:
        """A new Runtime generation: the barrier, then ``generation.started``."""
        self.bus.reset(reason)

    def start_producers(self) -> None:
        """The prepare boundary: history closes and control producers start."""
        self.bus.start_producers()

    def hold_delivery(self, source: str) -> None:
        """Sequence but do not deliver ``source`` items until ``release_delivery``."""
        self.bus.hold_delivery(source)

    def release_delivery(self, source: str) -> None:
        """Deliver the held items of ``source`` (late, so out of global order), then go live."""
        self.bus.release_delivery(source)

    def deliver_raw(self, source: str, item: object) -> None:
        """Hand subscribers an arbitrary object (a contract violation) without sequencing it."""
        self.bus.deliver_raw(source, item)

    def sample_values(self) -> dict[str, np.ndarray]:
        """Deterministic values for every numeric channel at the current tick."""
        return self.bus.sample_values()

    def flush(self) -> None:
        """Deliver the pending block of ticks now (rule 9)."""
        self.bus.flush()

    def end_tick(self, *, paced: bool = False) -> float:
        """Rule 8 (the flow): the seconds this tick's end waited on pressed gauges."""
        return self.flow.end_tick(paced=paced)

    # -- terminal -----------------------------------------------------------------------
    def request_completion(self, request: CompletionRequest) -> bool:
        """First completion request wins (rule 6); the Core side (the data source) may keep
        what was recorded of a failed Run (``keep_recorded``, contract FR2)."""
        return self.terminal.request_completion(request)

    def wait_completion(self, timeout: float) -> CompletionRequest | None:
        """Wait until some completion request won."""
        return self.terminal.wait_completion(timeout)

    def take_cut(self) -> TerminalSemanticCut:
        """Seal publishing and return the exact cut (a NORMAL completion if none won);
        the flow's gauges are dropped."""
        cut = self.terminal.take_cut()
        self.flow.clear()
        return cut

    def cut(self) -> TerminalSemanticCut:
        """The cut (taken once)."""
        return self.take_cut()

    def terminate(
        self,
        kind: CompletionKind = CompletionKind.NORMAL,
        reason: str = "done",
        *,
        timeout_s: float | None = None,
        keep_recorded: bool = False,
    ) -> list[FinalizerResult]:
        """Request completion (host side; ``keep_recorded``: its data source failed, FR2), cut,
        and run every finalizer (rule 7)."""
        self.terminal.request_completion(CompletionRequest(kind, reason, "host", keep_recorded=keep_recorded))
        return self.finalizers.run(self.take_cut(), timeout_s)

    def status(self) -> tuple[str, str | None]:
        """The Run status: required-finalizer precedence, then the completion kind."""
        return self.finalizers.status(self.terminal.winner)

    def run_failed(self) -> bool:
        """True when the Run's status is failed."""
        return self.status()[0] == "failed"

    # -- state tests read (each owned by a part; read-only here) -------------------------
    global_sequence = _Read[int](lambda core: core.bus.global_sequence)
    generation = _Read[int](lambda core: core.bus.generation)
    tick = _Read[int](lambda core: core.bus.tick)
    sealed = _Read[bool](lambda core: core.bus.sealed)
    subscribers = _Read[dict[str, list[Subscription]]](lambda core: core.bus.subscribers)
    #: (source, from_sequence, channels) of every accepted subscription
    subscribe_calls = _Read[list[tuple[str, int, tuple[str, ...]]]](lambda core: core.bus.subscribe_calls)
    #: (source, max_block) of every accepted subscription; blocks stamped so far (rule 9)
    subscribe_blocks = _Read[list[tuple[str, int]]](lambda core: core.bus.subscribe_blocks)
    blocks_stamped = _Read[int](lambda core: core.bus.blocks_stamped)
    grants = _Read[list[str]](lambda core: core.granting.granted)  # every grant given, in order
    registrations = _Read[list[Registration]](lambda core: core.finalizers.registrations)
    results = _Read[list[FinalizerResult]](lambda core: core.finalizers.results)
    completions = _Read[list[CompletionRequest]](lambda core: core.terminal.completions)
    winner = _Read[CompletionRequest | None](lambda core: core.terminal.winner)
    flow_gauges = _Read[list[Gauge]](lambda core: core.flow.gauges)
    flow_released = _Read[list[FlowGauge]](lambda core: core.flow.released)
    flow_waits = _Read[int](lambda core: core.flow.waits)
