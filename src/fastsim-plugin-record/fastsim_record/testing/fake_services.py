"""The fake Core's per-component services: subscriptions, grants, finalizers, gauges.

``FakeServices`` is ``CoreServices`` for one component; grants follow
``CapturePlan.justified_grants`` (contract section 5).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from fastsim_contract.errors import GrantRefused, TerminalError
from fastsim_contract.output_service import ComponentOutputs
from fastsim_contract.protocols import Finalizer, FlowGauge
from fastsim_contract.values import CompletionRequest, FinalizerRegistrationRequest
from fastsim_record.testing.fake_state import FakeState

if TYPE_CHECKING:
    from fastsim_record.testing.fake_bus import Subscription
    from fastsim_record.testing.fake_core import FakeCore, FakeRunContext

__all__ = ["FakeServices", "Gauge", "Registration", "ServicesMixin"]


@attrs.define(eq=False)
class Registration:
    """One registered finalizer."""

    core: FakeState
    request: FinalizerRegistrationRequest
    finalizer: Finalizer
    active: bool = True
    timed_out: bool = False

    def unregister(self) -> None:
        """Withdraw the finalizer (refused after the cut)."""
        if self.core.sealed and self.active:
            raise TerminalError("unregister after the terminal cut")
        self.active = False


@attrs.define(eq=False)
class Gauge:
    """One registered flow gauge."""

    core: FakeState
    gauge: FlowGauge

    def close(self) -> None:
        """Stop reading the gauge (idempotent)."""
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
    def outputs(self) -> ComponentOutputs:
        """The output service, as this component sees it."""
        return self.core.outputs.view(self.component)

    def subscribe(
        self, source: str, sink: Any, *, from_sequence: int = 1, channels: Sequence[str] = ()
    ) -> Subscription:
        """Atomic history-plus-live subscription (rule 3)."""
        return self.core._subscribe(self, source, sink, from_sequence, tuple(channels))

    def request_grant(self, grant: str) -> None:
        """A capability grant justified by the plan."""
        self.core._grant(self, grant)

    def register_finalizer(
        self, request: FinalizerRegistrationRequest, finalizer: Finalizer
    ) -> Registration:
        """Register a finalizer (refused after the cut)."""
        return self.core._register(request, finalizer)

    def request_completion(self, request: CompletionRequest) -> bool:
        """First completion request wins (rule 6)."""
        return self.core.request_completion(request)

    def register_flow_gauge(self, gauge: FlowGauge) -> Gauge:
        """Rule 8: wait on ``gauge`` after unpaced ticks (refused after the cut)."""
        if self.core.sealed:
            raise TerminalError("register_flow_gauge after the terminal cut")
        registration = Gauge(self.core, gauge)
        self.core.flow_gauges.append(registration)
        return registration


class ServicesMixin(FakeState):
    """What ``FakeServices`` asks of the fake Core: faults, grants, registrations."""

    def _grant(self, view: FakeServices, grant: str) -> None:
        self._fault("request_grant")
        plan = self.plan
        justified = plan.justified_grants()
        if not justified.get(grant, False):
            raise GrantRefused(f"request_grant: {grant!r} is not justified by the capture plan")
        view.grants.add(grant)
        self.grants.append(grant)

    def _register(self, request: FinalizerRegistrationRequest, finalizer: Finalizer) -> Registration:
        self._fault("register_finalizer")
        if not isinstance(request, FinalizerRegistrationRequest):
            raise TypeError("register_finalizer takes a FinalizerRegistrationRequest")
        with self._lock:
            if self.sealed:
                raise TerminalError("register_finalizer after the terminal cut")
            registration = Registration(self, request, finalizer)
            self.registrations.append(registration)
        return registration

    # -- producers ----------------------------------------------------------------------
