"""The fake Core's per-component services, and the grants part they ask.

``FakeServices`` is ``CoreServices`` for one component: each call goes to the part of
:class:`fastsim_record.testing.fake_core.FakeCore` that owns it (the bus, the grants,
the finalizers, the terminal, the flow).  Grants follow ``CapturePlan.justified_grants``
(contract section 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from fastsim_contract.errors import GrantRefused
from fastsim_contract.output_service import ComponentOutputs
from fastsim_contract.protocols import Finalizer, FlowGauge
from fastsim_contract.values import CapturePlan, CompletionRequest, FinalizerRegistrationRequest
from fastsim_record.testing.fake_bus import Subscription, check_fault
from fastsim_record.testing.fake_flow import Gauge
from fastsim_record.testing.fake_terminal import Registration

if TYPE_CHECKING:
    from fastsim_record.testing.fake_core import FakeCore, FakeRunContext

__all__ = ["FakeServices", "Gauge", "Grants", "Registration"]


@attrs.define(eq=False)
class Grants:
    """Capability grants: justified by the plan, or refused (contract section 5)."""

    plan: CapturePlan
    faults: set[str]
    granted: list[str] = attrs.field(factory=list)  # every grant given, in order

    def grant(self, holder: set[str], grant: str) -> None:
        """Give ``grant`` to the component whose grants are ``holder``."""
        check_fault(self.faults, "request_grant")
        if not self.plan.justified_grants().get(grant, False):
            raise GrantRefused(f"request_grant: {grant!r} is not justified by the capture plan")
        holder.add(grant)
        self.granted.append(grant)


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
        self,
        source: str,
        sink: Any,
        *,
        from_sequence: int = 1,
        channels: Sequence[str] = (),
        max_block: int = 1,
    ) -> Subscription:
        """Atomic history-plus-live subscription (rule 3); ``max_block`` > 1 accepts blocks."""
        return self.core.bus.subscribe(self.grants, source, sink, from_sequence, tuple(channels), max_block)

    def request_grant(self, grant: str) -> None:
        """A capability grant justified by the plan."""
        self.core.granting.grant(self.grants, grant)

    def register_finalizer(
        self, request: FinalizerRegistrationRequest, finalizer: Finalizer
    ) -> Registration:
        """Register a finalizer (refused after the cut)."""
        return self.core.finalizers.register(request, finalizer)

    def request_completion(self, request: CompletionRequest) -> bool:
        """First completion request wins (rule 6); a plugin never keeps a failed Run's
        recording: its ``keep_recorded`` is dropped (contract FR3)."""
        if request.keep_recorded:
            request = attrs.evolve(request, keep_recorded=False)
        return self.core.terminal.request_completion(request)

    def register_flow_gauge(self, gauge: FlowGauge) -> Gauge:
        """Rule 8: wait on ``gauge`` after unpaced ticks (refused after the cut)."""
        return self.core.flow.register(gauge)
