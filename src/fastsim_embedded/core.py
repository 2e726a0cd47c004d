"""The embedded Core: run context, the per-component Core services, and the publishers.

:class:`EmbeddedHost` is one Run's Core.  Producers (the run loop, tests) publish through
its ``publish_*`` methods on the simulation thread; each plugin gets its own
:class:`EmbeddedCore` view (``core_for(component)``) implementing
``fastsim_contract.protocols.CoreServices``.

Subscriptions a plugin may make (``EmbeddedCore.subscribe``):

    | # | source          | needs                                 | channels argument            |
    |---|-----------------|---------------------------------------|------------------------------|
    | 1 | lifecycle       | -                                     | must be empty                |
    | 2 | events          | -                                     | must be empty                |
    | 3 | control.audit   | before control producers start        | must be empty                |
    | 4 | control.result  | before control producers start        | must be empty                |
    | 5 | observations    | the ``observation`` grant             | empty or the planned set     |
    | 6 | cameras         | the ``camera`` grant                  | empty or planned channels    |

Grants (``request_grant``): ``output.write_lease`` always; ``observation`` only when the
plan selects numeric channels; ``camera`` only with cameras; ``render.state`` and
``scene.geometry@2`` only when enabled; anything else is refused.

Terminal sequence (``terminate``): publish ``run.stopping`` -> seal the bus and take the
:class:`TerminalSemanticCut` -> run finalizers to their absolute deadline -> revoke the
late ones' leases (bounded) -> status by required-finalizer precedence.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from fastsim_contract.errors import GrantRefused, SubscriptionRefused
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.payloads import freeze, portable_size
from fastsim_contract.protocols import (
    EnvelopeSink,
    Finalizer,
    FlowGauge,
    Subscription,
)
from fastsim_contract.values import (
    CameraSample,
    CapturePlan,
    ChannelDescriptor,
    CompletionKind,
    CompletionRequest,
    Envelope,
    FinalizerRegistrationRequest,
    GenerationBarrier,
    ObservationTick,
    PackedLayout,
    RowViews,
    SampleBlock,
    SourceKind,
    TerminalSemanticCut,
)
from fastsim_embedded.backends.base import (
    CameraReading,
    ControlCommand,
    ControlOutcome,
    ReadOnlySamples,
)
from fastsim_embedded.bus import CaptureBus
from fastsim_embedded.flow import DEFAULT_STALL_S, FlowControl, GaugeRegistration
from fastsim_embedded.output import ComponentOutputs, FileOutputService
from fastsim_embedded.terminal import (
    FinalizerOutcome,
    Registration,
    TerminalCoordinator,
    run_status,
)

__all__ = ["DefaultOutputPolicy", "EmbeddedCore", "EmbeddedHost", "EmbeddedRunContext", "RunOutcome"]


#: The deployment default output policy: Core's one ``RunOutputPolicy`` (an old name).
DefaultOutputPolicy = RunOutputPolicy


@attrs.define(eq=False)
class EmbeddedRunContext:
    """Run identity, rates, policy, declared channels and the live tick/generation facts."""

    run_id: str
    completion_id: str
    sensor_hz: float
    rate_policy: str
    physics_hz: float
    output_policy: RunOutputPolicy
    channels: Sequence[ChannelDescriptor]
    capture: CapturePlan
    services: frozenset[str] = frozenset()
    replay: object | None = None  # a render Replay's ReplaySource (fastsim_contract.render_services)
    generation: int = 0
    tick: int = 0
    sim_time_ns: int = 0
    #: what the host says about the Run (name, backend, seed, episode, scene description);
    #: a recorder may store it with its artifact
    metadata: Mapping[str, object] = attrs.field(factory=dict)


@attrs.frozen
class RunOutcome:
    """How the Run ended."""

    status: str  # succeeded | failed | cancelled | stopped
    reason: str | None
    completion: CompletionRequest
    cut: TerminalSemanticCut | None
    finalizers: tuple[FinalizerOutcome, ...] = ()
    committed: tuple[Path, ...] = ()
    disposed: tuple[Path, ...] = ()  # published-incomplete or quarantined staging files

    @property
    def ok(self) -> bool:
        """Succeeded (normal completion, every required finalizer ok)."""
        return self.status == "succeeded"


def _read_only(value: object) -> object:
    if isinstance(value, np.ndarray):
        if value.flags.writeable:
            value = value.copy()
            value.flags.writeable = False
        return value
    array = np.array(value)  # a scalar or list from a backend: freeze a copy
    array.flags.writeable = False
    return array


@attrs.define(eq=False)
class EmbeddedCore:
    """``CoreServices`` for one component."""

    host: EmbeddedHost
    component: str
    grants: set[str] = attrs.field(factory=set)
    registrations: list[Registration] = attrs.field(factory=list)
    _outputs: ComponentOutputs | None = attrs.field(init=False, default=None)

    @property
    def run(self) -> EmbeddedRunContext:
        """The Run context."""
        return self.host.context

    @property
    def outputs(self) -> ComponentOutputs:
        """This component's view of the output service (only its own leases)."""
        if self._outputs is None:
            self._outputs = ComponentOutputs(self.host.outputs, self.component)
        return self._outputs

    def subscribe(
        self,
        source: str,
        sink: EnvelopeSink,
        *,
        from_sequence: int = 1,
        channels: Sequence[str] = (),
    ) -> Subscription:
        """Atomic history-plus-live subscription (the module table)."""
        plan = self.host.context.capture
        if source == SourceKind.OBSERVATION.value:
            if "observation" not in self.grants:
                raise SubscriptionRefused("subscribe: observations need the 'observation' grant")
            if channels and tuple(channels) != plan.observation_channels:
                raise SubscriptionRefused(
                    "subscribe: observation channels differ from the compiled capture plan "
                    f"({list(channels)} != {list(plan.observation_channels)})"
                )
        elif source == SourceKind.CAMERA.value:
            if "camera" not in self.grants:
                raise SubscriptionRefused("subscribe: cameras need the 'camera' grant")
            planned = {c for cam in plan.cameras for c in cam.channels().values()}
            unknown = sorted(set(channels) - planned)
            if unknown:
                raise SubscriptionRefused(f"subscribe: camera channels not in the capture plan: {unknown}")
        elif channels:
            raise SubscriptionRefused(f"subscribe: {source!r} takes no channel selection")
        return self.host.bus.subscribe(source, sink, from_sequence=from_sequence)

    def request_grant(self, grant: str) -> None:
        """Grant only what the capture plan justifies (the module's grant table)."""
        plan = self.host.context.capture
        justified = {
            "output.write_lease": True,
            "observation": bool(plan.observation_channels),
            "camera": bool(plan.cameras),
            "render.state": plan.render_state_hz is not None,
            "scene.geometry@2": plan.geometry_hz is not None,
        }
        if grant not in justified:
            raise GrantRefused(f"request_grant: unknown grant {grant!r}")
        if not justified[grant]:
            raise GrantRefused(f"request_grant: the capture plan selects nothing that needs {grant!r}")
        self.grants.add(grant)
        self.host.grants.append((self.component, grant))

    def register_finalizer(
        self, request: FinalizerRegistrationRequest, finalizer: Finalizer
    ) -> Registration:
        """Register with the terminal coordinator."""
        registration = self.host.terminal.register(request, finalizer, self.component)
        self.registrations.append(registration)
        return registration

    def request_completion(self, request: CompletionRequest) -> bool:
        """Ask to complete the Run; ``True`` when this request won."""
        return self.host.terminal.request_completion(request)

    def register_flow_gauge(self, gauge: FlowGauge) -> GaugeRegistration:
        """Slow an unpaced Run while ``gauge`` is pressed (``fastsim_embedded.flow``)."""
        return self.host.flow.register(gauge, self.component)


@attrs.define(eq=False)
class EmbeddedHost:
    """One Run's in-process Core."""

    context: EmbeddedRunContext
    output_dir: Path
    portable_sizes: bool = True  # off: envelopes carry no portable_size (older Core)
    max_finalizer_timeout_s: float = 300.0
    revoke_grace_s: float = 5.0
    flow_stall_s: float = DEFAULT_STALL_S  # flow control: FC4's bound on one wait
    bus: CaptureBus = attrs.field(init=False)
    flow: FlowControl = attrs.field(init=False)
    terminal: TerminalCoordinator = attrs.field(init=False)
    outputs: FileOutputService = attrs.field(init=False)
    grants: list[tuple[str, str]] = attrs.field(factory=list)
    sink_errors: list[tuple[str, str]] = attrs.field(factory=list)
    _cores: dict[str, EmbeddedCore] = attrs.field(init=False, factory=dict)
    _channel_seq: dict[str, int] = attrs.field(init=False, factory=dict)
    _observed: int = attrs.field(init=False, default=0)
    _rows: tuple[tuple[int, int], ...] | None = attrs.field(init=False, default=None)
    _packed: PackedLayout | None = attrs.field(init=False, default=None)
    _gather: Any = attrs.field(init=False, default=None)  # byte index array, None: zero-copy
    _camera_index: dict[str, tuple[str, str, str]] | None = attrs.field(init=False, default=None)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)

    def __attrs_post_init__(self) -> None:
        self.bus = CaptureBus(self.context.capture, on_sink_error=self._sink_error)
        self.terminal = TerminalCoordinator(
            max_timeout_s=self.max_finalizer_timeout_s, revoke_grace_s=self.revoke_grace_s
        )
        self.outputs = FileOutputService(
            self.output_dir, self.context.output_policy, self.context.completion_id
        )
        self.flow = FlowControl(self.flow_stall_s)

    @classmethod
    def create(
        cls,
        *,
        capture: CapturePlan,
        channels: Sequence[ChannelDescriptor] = (),
        output_dir: Path,
        sensor_hz: float = 120.0,
        physics_hz: float | None = None,
        rate_policy: str = "exact",
        output_policy: RunOutputPolicy | None = None,
        run_id: str | None = None,
        **options: Any,
    ) -> EmbeddedHost:
        """A host with fresh run and completion identities."""
        run = run_id or uuid.uuid4().hex
        context = EmbeddedRunContext(
            run_id=run,
            completion_id=f"{run}-completion-{uuid.uuid4().hex[:12]}",
            sensor_hz=sensor_hz,
            rate_policy=rate_policy,
            physics_hz=physics_hz or sensor_hz,
            output_policy=output_policy or RunOutputPolicy(),
            channels=tuple(channels),
            capture=capture,
        )
        return cls(context=context, output_dir=output_dir, **options)

    def _sink_error(self, stream: str, exc: BaseException) -> None:
        self.sink_errors.append((stream, f"{type(exc).__name__}: {exc}"))

    def core_for(self, component: str) -> EmbeddedCore:
        """The ``CoreServices`` view for ``component`` (one per component)."""
        with self._lock:
            core = self._cores.get(component)
            if core is None:
                core = self._cores[component] = EmbeddedCore(self, component)
        return core

    # -- clock -------------------------------------------------------------------------
    def advance(self, tick: int, sim_time_ns: int) -> None:
        """The simulation reached ``tick`` at ``sim_time_ns``."""
        self.context.tick = tick
        self.context.sim_time_ns = sim_time_ns

    # -- publishers --------------------------------------------------------------------
    def _publish_event(self, source: SourceKind, data: Mapping[str, object]) -> Envelope | None:
        if not self.bus.captures(source):
            return None
        payload = freeze(data)
        ctx = self.context
        return self.bus.publish(
            source,
            generation=ctx.generation,
            tick=ctx.tick,
            sim_time_ns=ctx.sim_time_ns,
            payload=payload,
            portable_size=portable_size(payload) if self.portable_sizes else None,
        )

    def publish_lifecycle(self, event: str, **data: object) -> Envelope | None:
        """A lifecycle event (``run.created``, ``generation.started``, ``run.stopping``...)."""
        return self._publish_event(SourceKind.LIFECYCLE, {"event": event, **data})

    def publish_plugin_event(
        self, name: str, data: Mapping[str, object] | None = None, emitter: str = "scene"
    ) -> Envelope | None:
        """A plugin/scene event."""
        return self._publish_event(
            SourceKind.PLUGIN_EVENT, {"event": name, "emitter": emitter, "data": dict(data or {})}
        )

    def control_producers_started(self) -> None:
        """Control producers start now; later control subscriptions are refused."""
        self.bus.control_producers_started()

    def publish_control_issued(self, command: ControlCommand) -> Envelope | None:
        """Control audit: the command was issued."""
        return self._publish_event(
            SourceKind.CONTROL_AUDIT,
            {
                "event": "command.issued",
                "command_id": command.command_id,
                "command": command.name,
                "target": command.target,
                "args": dict(command.args),
            },
        )

    def publish_control_applied(self, command: ControlCommand, outcome: ControlOutcome) -> Envelope | None:
        """Control result: the command was applied (or rejected)."""
        return self._publish_event(
            SourceKind.CONTROL_RESULT,
            {
                "event": "command.applied",
                "command_id": command.command_id,
                "accepted": outcome.accepted,
                "detail": dict(outcome.detail),
            },
        )

    def wants_observations(self) -> bool:
        """Whether the plan selects numeric channels (else: no polling at all)."""
        return bool(self.context.capture.observation_channels)

    def publish_observation(self, values: Mapping[str, object]) -> Envelope | None:
        """One ObservationTick with every selected channel, in plan order (a SampleBlock)."""
        names = self.context.capture.observation_channels
        if not names:
            return None
        picked = tuple(map(values.__getitem__, names))  # KeyError: the backend broke its declaration
        if values.__class__ is not ReadOnlySamples:  # the backend did not vouch: check each
            for value in picked:
                if getattr(value, "flags", None) is None or value.flags.writeable:  # type: ignore[attr-defined]
                    picked = tuple(_read_only(v) for v in picked)
                    break
        self._observed += 1
        block = SampleBlock(names, picked, self._observed)
        return self._publish_tick(block)

    def _publish_tick(self, block: SampleBlock) -> Envelope | None:
        ctx = self.context
        return self.bus.publish(
            SourceKind.OBSERVATION,
            generation=ctx.generation,
            tick=ctx.tick,
            sim_time_ns=ctx.sim_time_ns,
            payload=block,
            wrap=ObservationTick,
        )

    def bind_numeric_layout(self, layout: Mapping[str, tuple[int, int]]) -> bool:
        """Use block sampling when the layout covers every planned channel (else ``False``)."""
        names = self.context.capture.observation_channels
        if not names or any(name not in layout for name in names):
            return False
        self._rows = tuple(layout[name] for name in names)
        return True

    def publish_observation_blocks(self, blocks: tuple[Any, ...]) -> Envelope | None:
        """One ObservationTick whose values are row views of ``blocks`` (``bind_numeric_layout``)."""
        names = self.context.capture.observation_channels
        if not names or self._rows is None:
            return None
        if any(block.flags.writeable for block in blocks):  # a few blocks: always checked
            blocks = tuple(_read_only(block) for block in blocks)
        self._observed += 1
        block = SampleBlock(names, RowViews(blocks, self._rows), self._observed)
        return self._publish_tick(block)

    def bind_numeric_packing(self, packing: Sequence[tuple[str, str, tuple[int, ...]]]) -> bool:
        """Use packed sampling when ``packing`` covers every planned channel (else ``False``).

        When the plan selects every packed channel in the backend's order the backend's
        buffer is published as-is; otherwise each tick is gathered into plan order with
        one C-level copy (a byte index computed here, once per Run).
        """
        names = self.context.capture.observation_channels
        where: dict[str, tuple[int, str, tuple[int, ...]]] = {}
        at = 0
        for name, dtype, shape in packing:
            dt = np.dtype(dtype)
            where[name] = (at, dt.str, tuple(int(d) for d in shape))
            at += int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        if not names or any(name not in where for name in names):
            return False
        self._packed = PackedLayout(tuple(where[name][1:] for name in names))
        if tuple(names) == tuple(name for name, _, _ in packing):
            self._gather = None
        else:
            self._gather = np.concatenate([
                np.arange(where[name][0], where[name][0] + nbytes, dtype=np.intp)
                for name, nbytes in zip(names, np.diff((*self._packed.offsets, self._packed.nbytes)))
            ])
        return True

    def publish_observation_packed(self, buffer: Any) -> Envelope | None:
        """One ObservationTick whose values are ``PackedValues`` over one buffer (``bind_numeric_packing``)."""
        layout = self._packed
        if layout is None:
            return None
        if self._gather is not None:  # plan order differs: one gather copy
            buffer = np.ascontiguousarray(buffer).reshape(-1).view(np.uint8).take(self._gather)
            buffer.flags.writeable = False
        elif buffer.flags.writeable:  # the backend did not freeze it
            buffer = np.array(buffer, order="C")
            buffer.flags.writeable = False
        self._observed += 1
        ctx = self.context
        return self.bus.publish_observation_packed(
            ctx.generation, ctx.tick, ctx.sim_time_ns, ctx.capture.observation_channels, buffer, layout,
            self._observed,
        )

    def publish_cameras(self, readings: Sequence[CameraReading]) -> None:
        """Camera samples of the planned cameras, one envelope each."""
        by_channel = self._camera_index
        if by_channel is None:
            by_channel = self._camera_index = {
                channel: (cam.alias, role, f"cameras.{cam.alias}.{role}")
                for cam in self.context.capture.cameras
                for role, channel in cam.channels().items()
            }
        if not by_channel:
            return
        ctx = self.context
        for reading in readings:
            where = by_channel.get(reading.channel)
            if where is None:
                continue
            alias, role, key = where
            seq = self._channel_seq.get(reading.channel, 0) + 1
            self._channel_seq[reading.channel] = seq
            sample = CameraSample(
                camera=alias,
                channel=reading.channel,
                role=role,
                value=_read_only(reading.value),
                calibration_digest=reading.calibration_digest,
                channel_sequence=seq,
                profile=freeze(reading.profile) if reading.profile is not None else None,
            )
            self.bus.publish(
                SourceKind.CAMERA,
                generation=ctx.generation,
                tick=ctx.tick,
                sim_time_ns=ctx.sim_time_ns,
                payload=sample,
                sequence_key=key,
            )

    def begin_generation(self, reason: str = "reset") -> int:
        """A new Runtime generation: the barrier, then ``generation.started``."""
        previous = self.context.generation
        self.context.generation = previous + 1
        ctx = self.context
        self.bus.publish(
            SourceKind.GENERATION_BARRIER,
            generation=ctx.generation,
            tick=ctx.tick,
            sim_time_ns=ctx.sim_time_ns,
            payload=GenerationBarrier(ctx.generation, previous, reason),
        )
        self.publish_lifecycle("generation.started", generation=ctx.generation, previous=previous, reason=reason)
        return ctx.generation

    # -- terminal ------------------------------------------------------------------------
    def request_completion(self, kind: CompletionKind, reason: str, requested_by: str = "host") -> bool:
        """The host's own completion request (duration reached, interrupt, failure)."""
        return self.terminal.request_completion(CompletionRequest(kind, reason, requested_by))

    def take_cut(self) -> TerminalSemanticCut:
        """Publish ``run.stopping``, seal the bus and return the exact cut."""
        completion = self.terminal.completion
        if completion is None:
            self.request_completion(CompletionKind.NORMAL, "run ended")
            completion = self.terminal.completion
        assert completion is not None  # noqa: S101 - set just above
        self.publish_lifecycle(
            "run.stopping",
            completion=completion.kind.value,
            reason=completion.reason,
            requested_by=completion.requested_by,
            wall_time_unix_ns=time.time_ns(),
        )
        final, per_source = self.bus.seal()
        self.terminal.mark_cut()
        self.flow.close()
        if completion.kind is CompletionKind.FAILED:
            self.outputs.refuse_commits(f"the Run failed ({completion.requested_by}: {completion.reason})")
        return TerminalSemanticCut(
            final_global_sequence=final,
            source_final_sequences=freeze(per_source),
            completion=completion,
            final_generation=self.context.generation,
        )

    def finalize(self, cut: TerminalSemanticCut) -> tuple[FinalizerOutcome, ...]:
        """Run every registered finalizer against ``cut`` (late ones are cancelled+revoked)."""
        return self.terminal.run_finalizers(cut, self._revoke)

    def _revoke(self, owner: str, deadline: float) -> bool:
        return self.outputs.revoke_open(deadline, owner)

    def cleanup(self, deadline: float) -> bool:
        """Core's end-of-run cleanup: revoke whatever no one committed or aborted."""
        return self.outputs.revoke_open(deadline)

    def outcome(
        self,
        cut: TerminalSemanticCut | None,
        finalizers: tuple[FinalizerOutcome, ...],
        *,
        failure: str | None = None,
    ) -> RunOutcome:
        """Summarise the Run (the terminal table in ``fastsim_embedded.terminal``)."""
        completion = self.terminal.completion or CompletionRequest(CompletionKind.FAILED, failure or "", "host")
        status, reason = run_status(completion, finalizers)
        if failure is not None:
            status, reason = "failed", failure
        committed = tuple(t.final for t in self.outputs.transactions() if t.state == "committed")
        disposed = tuple(t.disposed_to for t in self.outputs.transactions() if t.disposed_to is not None)
        return RunOutcome(status, reason, completion, cut, finalizers, committed, disposed)

    def terminate(self) -> RunOutcome:
        """Cut, finalize, and summarise (without plugin stop/close; see the run loop)."""
        cut = self.take_cut()
        return self.outcome(cut, self.finalize(cut))
