"""What one Run is and how it ended: the run context (shared by the host's parts) and the outcome."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    CompletionRequest,
    TerminalSemanticCut,
)
from fastsim_embedded.host.terminal import FinalizerOutcome

__all__ = ["EmbeddedRunContext", "RunOutcome"]


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
