"""The Core services one component sees (``fastsim_contract.protocols.CoreServices``).

Subscriptions a plugin may make (``EmbeddedCore.subscribe``):

    | # | source          | needs                                 | channels argument            |
    |---|-----------------|---------------------------------------|------------------------------|
    | 1 | lifecycle       | -                                     | must be empty                |
    | 2 | events          | -                                     | must be empty                |
    | 3 | control.audit   | before control producers start        | must be empty                |
    | 4 | control.result  | before control producers start        | must be empty                |
    | 5 | observations    | the ``observation`` grant             | empty or the plan's channels,|
    |   |                 |                                       | in the plan's order          |
    | 6 | cameras         | the ``camera`` grant                  | empty or planned channels    |
    | 7 | render.state, geometry, fluid.emissions | in the plan   | must be empty                |

``max_block`` is an ``int >= 1``; above 1 only for ``observations`` (the sink accepts
``ObservationBlock`` envelopes of up to that many ticks, ``fastsim_embedded.host.blocks``).
Anything else is refused with one line.

Grants (``request_grant``): ``CapturePlan.justified_grants`` (contract section 5).

Completion (``request_completion``): the first request wins; a plugin's ``keep_recorded``
is dropped, since only the host's data source may keep a failed Run's recording (FR3).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from fastsim_contract.errors import GrantRefused, SubscriptionRefused
from fastsim_contract.output_service import ComponentOutputs
from fastsim_contract.protocols import EnvelopeSink, Finalizer, FlowGauge, Subscription
from fastsim_contract.values import CompletionRequest, FinalizerRegistrationRequest, SourceKind
from fastsim_embedded.host.flow import GaugeRegistration
from fastsim_embedded.host.terminal import Registration

if TYPE_CHECKING:
    from fastsim_embedded.host.context import EmbeddedRunContext
    from fastsim_embedded.host.core import EmbeddedHost

__all__ = ["EmbeddedCore"]


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
        max_block: int = 1,
    ) -> Subscription:
        """Atomic history-plus-live subscription (the module table)."""
        plan = self.host.context.capture
        if type(max_block) is not int or max_block < 1:
            raise SubscriptionRefused(f"subscribe: max_block must be an int >= 1 (got {max_block!r})")
        if max_block != 1 and source != SourceKind.OBSERVATION.value:
            raise SubscriptionRefused(f"subscribe: max_block applies to 'observations' only (got {max_block} for {source!r})")
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
        return self.host.bus.subscribe(source, sink, from_sequence=from_sequence, max_block=max_block)

    def request_grant(self, grant: str) -> None:
        """Grant only what the capture plan justifies (the module's grant table)."""
        plan = self.host.context.capture
        justified = plan.justified_grants()
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
        """Ask to complete the Run; ``True`` when this request won.  A plugin is not the
        Run's data source: its ``keep_recorded`` is dropped (a plain ``failed``, contract FR3)."""
        if request.keep_recorded:
            request = attrs.evolve(request, keep_recorded=False)
        return self.host.terminal.request_completion(request)

    def register_flow_gauge(self, gauge: FlowGauge) -> GaugeRegistration:
        """Slow an unpaced Run while ``gauge`` is pressed (``fastsim_embedded.host.flow``)."""
        return self.host.flow.register(gauge, self.component)

