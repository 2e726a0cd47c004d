"""The embedded Core: the run context and the host of one Run (events, control, terminal).

:class:`EmbeddedHost` is one Run's Core.  Producers (the run loop, tests) publish through
its ``publish_*`` methods on the simulation thread; each plugin gets its own
:class:`EmbeddedCore` view (``core_for(component)``) implementing
``fastsim_contract.protocols.CoreServices``.

The per-component services and their subscription and grant tables are
``fastsim_embedded.host.services``; the observation and camera publishers are
``fastsim_embedded.host.observations`` (a mixin of :class:`EmbeddedHost`).

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

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.payloads import FrozenDict, freeze, portable_size
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    CompletionKind,
    CompletionRequest,
    Envelope,
    GenerationBarrier,
    PackedLayout,
    SourceKind,
    TerminalSemanticCut,
)
from fastsim_embedded.backends.base import (
    ControlCommand,
    ControlOutcome,
)
from fastsim_embedded.host.bus import CaptureBus
from fastsim_embedded.host.flow import DEFAULT_STALL_S, FlowControl
from fastsim_embedded.host.observations import ObservationPublishing
from fastsim_embedded.host.services import EmbeddedCore
from fastsim_embedded.host.terminal import (
    FinalizerOutcome,
    TerminalCoordinator,
    run_status,
)
from fastsim_embedded.output.transaction import FileOutputService

__all__ = ["EmbeddedCore", "EmbeddedHost", "EmbeddedRunContext", "RunOutcome"]

_EVENT = SourceKind.PLUGIN_EVENT
_AUDIT = SourceKind.CONTROL_AUDIT
_RESULT = SourceKind.CONTROL_RESULT



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


@attrs.define(eq=False)
class EmbeddedHost(ObservationPublishing):
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
        return self._publish_frozen(source, freeze(data))

    def _publish_frozen(self, source: SourceKind, payload: FrozenDict) -> Envelope | None:
        """Publish an already frozen event payload (the caller checked ``captures``)."""
        ctx = self.context  # the hot path: straight to the bus, without publish_now's **options
        return self.bus.publish(
            source, generation=ctx.generation, tick=ctx.tick, sim_time_ns=ctx.sim_time_ns,
            payload=payload, portable_size=portable_size(payload) if self.portable_sizes else None,
        )

    def publish_lifecycle(self, event: str, **data: object) -> Envelope | None:
        """A lifecycle event (``run.created``, ``generation.started``, ``run.stopping``...)."""
        return self._publish_event(SourceKind.LIFECYCLE, {"event": event, **data})

    def publish_plugin_event(
        self, name: str, data: Mapping[str, object] | None = None, emitter: str = "scene"
    ) -> Envelope | None:
        """A plugin/scene event (built frozen, like the control events below)."""
        if not self.bus.captures(_EVENT):
            return None
        return self._publish_frozen(_EVENT, FrozenDict({
            "event": freeze(name), "emitter": freeze(emitter), "data": freeze(dict(data or {})),
        }))

    def control_producers_started(self) -> None:
        """Control producers start now; later control subscriptions are refused."""
        self.bus.control_producers_started()

    # The two control events run once per command on the simulation thread: their payloads
    # are built frozen (``freeze`` of the same mapping gives the same FrozenDict; only the
    # nested values need a deep copy), and nothing is built when the source is not captured.
    def publish_control_issued(self, command: ControlCommand) -> Envelope | None:
        """Control audit: the command was issued."""
        if not self.bus.captures(_AUDIT):
            return None
        return self._publish_frozen(_AUDIT, FrozenDict({
            "event": "command.issued",
            "command_id": freeze(command.command_id),
            "command": freeze(command.name),
            "target": freeze(command.target),
            "args": freeze(dict(command.args)),
        }))

    def publish_control_applied(self, command: ControlCommand, outcome: ControlOutcome) -> Envelope | None:
        """Control result: the command was applied (or rejected)."""
        if not self.bus.captures(_RESULT):
            return None
        return self._publish_frozen(_RESULT, FrozenDict({
            "event": "command.applied",
            "command_id": freeze(command.command_id),
            "accepted": freeze(outcome.accepted),
            "detail": freeze(dict(outcome.detail)),
        }))

    def begin_generation(self, reason: str = "reset") -> int:
        """A new Runtime generation: the barrier, then ``generation.started``."""
        previous = self.context.generation
        self.context.generation = previous + 1
        ctx = self.context
        self.publish_now(SourceKind.GENERATION_BARRIER, GenerationBarrier(ctx.generation, previous, reason))
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
        """Summarise the Run (the terminal table in ``fastsim_embedded.host.terminal``)."""
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
