"""The driver a Core implementation hands the contract suite (``contracts/``).

The Protocols in ``fastsim_contract.protocols`` are what a *plugin* sees.  To check a
Core against them, the suite must also play the *producer* side: publish items, start
producers, tick, reset, and end the Run.  A Core implementation exposes that through a
:class:`CoreDriver`, built by a :data:`DriverFactory` from a :class:`HarnessSpec`.
Register a factory in ``contracts/implementations.py`` (one line) and the whole suite
runs against it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import attrs

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.protocols import CoreServices
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    CompletionRequest,
    Envelope,
    TerminalSemanticCut,
)

__all__ = ["CameraDriver", "CoreDriver", "DriverFactory", "FinalizerReport", "Finish", "HarnessSpec", "Profile", "RenderDriver"]


#: A camera sample's optional calibration profile.
Profile = Mapping[str, object] | None



@attrs.frozen
class HarnessSpec:
    """The Run a driver sets up."""

    capture: CapturePlan
    channels: tuple[ChannelDescriptor, ...] = ()
    output_policy: RunOutputPolicy = attrs.field(factory=RunOutputPolicy)
    services: frozenset[str] = frozenset()  # RunContext.services, e.g. {"fluid.audit"}
    max_finalizer_timeout_s: float = 30.0
    portable_sizes: bool = True  # False: behave like an older Core (no portable_size)
    sensor_hz: float = 100.0
    flow_stall_s: float = 5.0  # flow control: the longest continuous wait on one gauge


@attrs.frozen
class FinalizerReport:
    """What one finalizer did, as the Core saw it."""

    component: str
    ok: bool
    reason: str | None
    timed_out: bool = False


@attrs.frozen
class Finish:
    """How the Run ended."""

    cut: TerminalSemanticCut
    status: str  # succeeded | failed | cancelled | stopped
    reason: str | None
    finalizers: tuple[FinalizerReport, ...]


class CoreDriver(Protocol):
    """The producer side of one Run on a Core under test."""

    def core(self, component: str) -> CoreServices:
        """The ``CoreServices`` a plugin named ``component`` gets."""
        ...

    def publish_lifecycle(self, event: str, **data: object) -> Envelope | None: ...
    def publish_plugin_event(self, name: str, data: Mapping[str, object] | None = None) -> Envelope | None: ...

    def start_producers(self) -> None:
        """Every plugin prepared: control producers start (the prepare boundary)."""
        ...

    def issue_control(self, command_id: str) -> None:
        """Audit (issued) and result (applied) of one command."""
        ...

    def tick(self, values: Mapping[str, object]) -> None:
        """Advance one tick and publish these numeric channel values."""
        ...

    def reset(self) -> None:
        """Start the next Runtime generation."""
        ...

    def end_tick(self, *, paced: bool = False) -> float:
        """The end of a tick as the Run loop sees it (section 10): an unpaced Run waits
        while a registered gauge is pressed; returns the seconds it waited."""
        ...

    def finish(self, completion: CompletionRequest | None = None) -> Finish:
        """Request ``completion`` (if given) as Core's own side, the Run's data source (its
        ``keep_recorded`` is honoured: contract FR2), take the cut, run every finalizer."""
        ...

    def artifact(self, name: str) -> bytes | None:
        """The bytes published under the final ``name``, or ``None``."""
        ...

    def leftovers(self, name: str) -> Sequence[str]:
        """Where an unpublished staging artifact of ``name`` ended up (policy-dependent)."""
        ...

    def close(self) -> None: ...


class CameraDriver(CoreDriver, Protocol):
    """Optional capability: a driver that can publish camera samples (suite skips otherwise)."""

    def publish_camera(
        self,
        channel: str,
        value: object,
        calibration_digest: str,
        profile: Mapping[str, object] | None = None,
    ) -> None:
        """Publish one sample of a planned camera channel in the current tick."""
        ...


class RenderDriver(CoreDriver, Protocol):
    """Optional capability: a driver that can publish render-side items (suite skips otherwise)."""

    def publish_render(self, source: str, payload: Mapping[str, object]) -> Envelope | None:
        """Publish one ``render.state``, ``geometry`` or ``fluid.emissions`` item in the
        current tick, as a read-only mapping; ``None`` when the plan does not capture it."""
        ...


DriverFactory = Callable[[HarnessSpec, Path], CoreDriver]
