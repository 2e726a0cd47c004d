"""Tiny consumers for the contract suite: a recording sink and scriptable finalizers."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import attrs

from fastsim_contract.protocols import OutputService, WriteLease
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    Envelope,
    FinalizerResult,
    TerminalSemanticCut,
)

MANDATORY = frozenset({"lifecycle", "events", "control.audit", "control.result"})
CHANNELS = (
    ChannelDescriptor("robot.joint_position", "numeric", "float64", (3,), ("rad",) * 3),
    ChannelDescriptor("robot.joint_velocity", "numeric", "float64", (3,), ("rad/s",) * 3),
)
NAMES = tuple(c.name for c in CHANNELS)


def plan(observations: bool = True) -> CapturePlan:
    """Mandatory sources, plus both channels when ``observations``."""
    if not observations:
        return CapturePlan(sources=MANDATORY)
    return CapturePlan(sources=MANDATORY | {"observations"}, observation_channels=NAMES)


@attrs.define(eq=False)
class Recorder:
    """A sink that keeps every envelope."""

    items: list[Envelope] = attrs.field(factory=list)

    def __call__(self, envelope: Envelope) -> None:
        self.items.append(envelope)

    def globals(self) -> list[int]:
        """Global sequences in delivery order."""
        return [e.global_sequence for e in self.items]

    def sources(self) -> list[int]:
        """Source sequences in delivery order."""
        return [e.source_sequence for e in self.items]


@attrs.define(eq=False)
class ScriptedFinalizer:
    """``ok`` / ``fail`` / ``raise`` / ``hang`` (until cancelled) finalizer."""

    component: str
    mode: str = "ok"
    cuts: list[tuple[TerminalSemanticCut, float]] = attrs.field(factory=list)
    cancelled: threading.Event = attrs.field(factory=threading.Event)

    def finalize(self, cut: TerminalSemanticCut, deadline_monotonic: float) -> FinalizerResult:
        """Behave as scripted."""
        self.cuts.append((cut, deadline_monotonic))
        if self.mode == "raise":
            raise RuntimeError("scripted finalizer failure")
        if self.mode == "hang":
            self.cancelled.wait(60)
            return FinalizerResult(self.component, ok=True, reason=None)
        ok = self.mode == "ok"
        return FinalizerResult(self.component, ok=ok, reason=None if ok else "scripted failure")

    def cancel(self) -> None:
        """Record the cancellation."""
        self.cancelled.set()


def receipt(size: int, completion_id: str, **extra: object) -> Mapping[str, object]:
    """A structural receipt for ``size`` bytes."""
    return {
        "validator": "contract-suite",
        "validated_bytes": size,
        "integrity": "structural",
        "completion_id": completion_id,
        **extra,
    }


def write_sealed(outputs: OutputService, name: str, data: bytes) -> WriteLease:
    """Open, write and seal ``data`` under ``name``."""
    lease = outputs.open_write(name)
    lease.write(data)
    lease.flush()
    outputs.seal(lease)
    return lease


@attrs.define(eq=False)
class CommittingFinalizer:
    """A finalizer that runs the whole output transaction for ``name`` at the cut."""

    component: str
    outputs: OutputService
    completion_id: str
    name: str = "final.fsr"
    data: bytes = b"final bytes"
    error: Exception | None = None

    def finalize(self, cut: TerminalSemanticCut, deadline_monotonic: float) -> FinalizerResult:
        """write -> seal -> readback -> confirm -> commit; a refusal is the failure reason."""
        lease = write_sealed(self.outputs, self.name, self.data)
        readback = self.outputs.open_readback(lease)
        readback.close()
        self.outputs.confirm_validation(readback, receipt(len(self.data), self.completion_id))
        try:
            committed = self.outputs.commit(lease)
        except Exception as exc:
            self.error = exc
            self.outputs.abort(lease)
            return FinalizerResult(self.component, ok=False, reason=str(exc))
        return FinalizerResult(self.component, ok=True, reason=None, committed_name=committed)

    def cancel(self) -> None:
        """Nothing to cancel."""


@attrs.define(eq=False)
class ScriptedGauge:
    """A ``FlowGauge`` the test presses and relieves, counting the host's waits."""

    relieved: threading.Event = attrs.field(factory=threading.Event)
    waits: int = 0

    def __attrs_post_init__(self) -> None:
        self.relieved.set()

    @property
    def pressed(self) -> bool:
        """Pressed until relieved."""
        return not self.relieved.is_set()

    def press(self) -> None:
        """Start pressing."""
        self.relieved.clear()

    def relieve(self) -> None:
        """Stop pressing."""
        self.relieved.set()

    def wait_relieved(self, timeout_s: float) -> bool:
        """Count the call, then wait."""
        self.waits += 1
        return self.relieved.wait(timeout_s)
