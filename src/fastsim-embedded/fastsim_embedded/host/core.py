"""The embedded Core: the host of one Run, composed of its parts, and its terminal sequence.

:class:`EmbeddedHost` is one Run's Core.  It holds the Run's parts:

    | # | part           | module                            | what it does                          |
    |---|----------------|-----------------------------------|---------------------------------------|
    | 1 | context        | ``fastsim_embedded.host.context``  | identity, rates, the live tick        |
    | 2 | bus            | ``fastsim_embedded.host.bus``      | sequences, history, delivery          |
    | 3 | events         | ``fastsim_embedded.host.events``   | lifecycle, plugin events, control     |
    | 4 | observations   | ``fastsim_embedded.host.observations`` | observation and camera samples    |
    | 5 | terminal       | ``fastsim_embedded.host.terminal`` | completion, finalizers, run status    |
    | 6 | outputs        | ``fastsim_embedded.output.transaction`` | the real-file transactions       |
    | 7 | flow           | ``fastsim_embedded.host.flow``     | flow control of unpaced Runs          |

Producers (the run loop, tests) publish through ``host.events`` and ``host.observations``
on the simulation thread; each plugin gets its own :class:`EmbeddedCore` view
(``core_for(component)``, ``fastsim_embedded.host.services``) implementing
``fastsim_contract.protocols.CoreServices``.

Terminal sequence (``terminate``): publish ``run.stopping`` -> seal the bus and take the
:class:`TerminalSemanticCut` (a ``failed`` completion refuses every commit from here on,
unless the host's own data source asked to keep what was recorded: contract FR1-FR5) ->
run finalizers to their absolute deadline -> revoke the late ones' leases (bounded) ->
status by required-finalizer precedence.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.payloads import freeze
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    CompletionKind,
    CompletionRequest,
    TerminalSemanticCut,
)
from fastsim_embedded.host.bus import CaptureBus
from fastsim_embedded.host.context import EmbeddedRunContext, RunOutcome
from fastsim_embedded.host.events import EventPublisher
from fastsim_embedded.host.flow import DEFAULT_STALL_S, FlowControl
from fastsim_embedded.host.observations import ObservationPublisher
from fastsim_embedded.host.services import EmbeddedCore
from fastsim_embedded.host.terminal import (
    FinalizerOutcome,
    TerminalCoordinator,
    run_status,
)
from fastsim_embedded.output.transaction import FileOutputService

__all__ = ["EmbeddedHost"]

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
    events: EventPublisher = attrs.field(init=False)
    observations: ObservationPublisher = attrs.field(init=False)
    _cores: dict[str, EmbeddedCore] = attrs.field(init=False, factory=dict)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)

    def __attrs_post_init__(self) -> None:
        self.bus = CaptureBus(self.context.capture, on_sink_error=self._sink_error)
        self.terminal = TerminalCoordinator(
            max_timeout_s=self.max_finalizer_timeout_s, revoke_grace_s=self.revoke_grace_s
        )
        self.outputs = FileOutputService(
            self.output_dir, self.context.output_policy, self.context.completion_id
        )
        self.flow = FlowControl(self.flow_stall_s, flush=self.bus.flush)
        self.events = EventPublisher(self.context, self.bus, self.portable_sizes)
        self.observations = ObservationPublisher(self.context, self.bus, self.events.publish_now)

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

    def control_producers_started(self) -> None:
        """Control producers start now; later control subscriptions are refused."""
        self.bus.control_producers_started()

    # -- terminal ------------------------------------------------------------------------
    def request_completion(
        self, kind: CompletionKind, reason: str, requested_by: str = "host", *, keep_recorded: bool = False,
    ) -> bool:
        """The host's own completion request (duration reached, interrupt, failure).

        ``keep_recorded`` (``failed`` only): the data source this host drives failed and what
        was recorded before it is sound, so commits stay allowed (contract FR2).  Only the
        host's driver may ask it; a plugin's request never keeps (``EmbeddedCore``, FR3)."""
        return self.terminal.request_completion(
            CompletionRequest(kind, reason, requested_by, keep_recorded=keep_recorded)
        )

    def take_cut(self) -> TerminalSemanticCut:
        """Publish ``run.stopping``, seal the bus and return the exact cut."""
        completion = self.terminal.completion
        if completion is None:
            self.request_completion(CompletionKind.NORMAL, "run ended")
            completion = self.terminal.completion
        assert completion is not None  # noqa: S101 - set just above
        self.events.publish_lifecycle(
            "run.stopping",
            completion=completion.kind.value,
            reason=completion.reason,
            requested_by=completion.requested_by,
            wall_time_unix_ns=time.time_ns(),
        )
        final, per_source = self.bus.seal()
        self.terminal.mark_cut()
        self.flow.close()
        if completion.kind is CompletionKind.FAILED and not completion.keep_recorded:  # FR1; FR2 keeps
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
