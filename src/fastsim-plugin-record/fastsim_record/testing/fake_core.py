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

import threading
from collections.abc import Sequence

import attrs

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
from fastsim_record.testing.fake_bus import (
    KINDS,
    MANDATORY_SOURCES,
    FakeBus,
    InjectedFault,
    Subscription,
)
from fastsim_record.testing.fake_output import FakeOutputService
from fastsim_record.testing.fake_services import FakeServices, Gauge, Registration, ServicesMixin
from fastsim_record.testing.fake_terminal import FakeTerminal

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
class FakeCore(FakeBus, ServicesMixin, FakeTerminal):
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
    subscribers: dict[str, list[Subscription]] = attrs.field(factory=dict)
    subscribe_calls: list[tuple[str, int, tuple[str, ...]]] = attrs.field(factory=list)
    grants: list[str] = attrs.field(factory=list)
    registrations: list[Registration] = attrs.field(factory=list)
    completions: list[CompletionRequest] = attrs.field(factory=list)
    winner: CompletionRequest | None = None
    results: list[FinalizerResult] = attrs.field(factory=list)
    held: dict[str, list[Envelope]] = attrs.field(factory=dict)
    final_cut: TerminalSemanticCut | None = None
    flow_gauges: list[Gauge] = attrs.field(factory=list)
    flow_released: list[FlowGauge] = attrs.field(factory=list)
    flow_waits: int = 0  # ticks after which ``end_tick`` waited on a pressed gauge
    _views: dict[str, FakeServices] = attrs.field(factory=dict)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _source_locks: dict[str, threading.RLock] = attrs.field(factory=dict)
    _completed: threading.Event = attrs.field(factory=threading.Event)

    def __attrs_post_init__(self) -> None:
        if self.capture is None:
            self.capture = default_plan(self.channels)
        for name in KINDS:
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
