"""The contract check's tools: tiny consumers (a recording sink, scriptable finalizers,
a flow gauge), receipt and plan builders, and ``raises``/``Skip`` so that the check
runs without pytest."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager

import attrs
import numpy as np

from fastsim_contract.harness import CoreDriver
from fastsim_contract.protocols import CoreServices, OutputService, WriteLease
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    Envelope,
    FinalizerRegistrationRequest,
    FinalizerResult,
    GenerationBarrier,
    ObservationBlock,
    ObservationTick,
    TerminalSemanticCut,
)

__all__ = [
    "ALL_SOURCES",
    "CHANNELS",
    "MANDATORY",
    "NAMES",
    "CommittingFinalizer",
    "MakeCore",
    "Recorder",
    "ScriptedFinalizer",
    "ScriptedGauge",
    "Skip",
    "plan",
    "register",
    "values_at",
    "raises",
    "receipt",
    "watch",
    "write_sealed",
    "fingerprint",
    "per_tick",
]

#: Builds one driver of the Core under test from ``HarnessSpec`` keyword arguments.
MakeCore = Callable[..., CoreDriver]


class Skip(Exception):
    """The Core under test lacks an optional capability this case needs."""


@contextmanager
def raises(*expected: type[BaseException], match: str | None = None) -> Iterator[None]:
    """Assert that the block raises one of ``expected`` (``pytest.raises`` without pytest),
    whose text contains the regular expression ``match`` when given."""
    try:
        yield
    except expected as exc:
        if match is not None and re.search(match, str(exc)) is None:
            raise AssertionError(f"{type(exc).__name__} {str(exc)!r} does not match {match!r}") from exc
        return
    names = " or ".join(e.__name__ for e in expected)
    raise AssertionError(f"expected {names}, nothing was raised")


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


def values_at(k: float) -> dict[str, object]:
    """Both channels' values at tick ``k``."""
    return {name: np.full(3, k + i) for i, name in enumerate(NAMES)}


def register(core: CoreServices, component: str, mode: str = "ok", *, required: bool = True, timeout: float = 10.0) -> ScriptedFinalizer:
    """Register a ``ScriptedFinalizer`` for ``component`` on ``core``."""
    finalizer = ScriptedFinalizer(component, mode)
    request = FinalizerRegistrationRequest(component, required, timeout, ("lifecycle",))
    core.register_finalizer(request, finalizer)
    return finalizer


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


ALL_SOURCES = ("lifecycle", "events", "control.audit", "control.result", "observations")


def per_tick(items: Iterable[Envelope]) -> list[Envelope]:
    """``items`` in delivery order, each observation block (BK1-BK8) expanded to the
    per-tick envelopes it stands for: tick ``i`` of a block at global sequence ``g`` and
    capture sequence ``c`` is ``block.tick(i)`` at ``g + i`` / ``c + i``, with its own tick
    and simulation time."""
    out: list[Envelope] = []
    for envelope in items:
        block = envelope.payload
        if not isinstance(block, ObservationBlock):
            out.append(envelope)
            continue
        for i in range(len(block)):
            out.append(envelope._replace(
                global_sequence=envelope.global_sequence + i, tick=int(block.ticks[i]),
                sim_time_ns=int(block.sim_time_ns[i]), payload=block.tick(i),
                source_sequence=envelope.source_sequence + i,
            ))
    return out


def fingerprint(envelope: Envelope) -> tuple[object, ...]:
    """What a per-tick consumer can tell of ``envelope``: its stamp, and for an observation
    tick its capture and channel sequence, channels and the values' bytes (a barrier: its
    generations; anything else: its payload's text)."""
    stamp = (envelope.global_sequence, envelope.source.value, envelope.generation, envelope.tick,
             envelope.sim_time_ns, envelope.source_sequence, envelope.portable_size)
    payload = envelope.payload
    if isinstance(payload, ObservationTick):
        values = b"".join(np.ascontiguousarray(v).tobytes() for v in payload.values)
        sequence = tuple(sample.channel_sequence for sample in payload.samples)
        return (*stamp, payload.capture_sequence, sequence, payload.channels, values)
    if isinstance(payload, GenerationBarrier):
        return (*stamp, payload.generation, payload.previous, payload.reason)
    if isinstance(payload, Mapping) and any("wall_time" in str(key) for key in payload):  # differs per Run
        return (*stamp[:-1], repr({k: v for k, v in payload.items() if "wall_time" not in str(k)}))
    return (*stamp, repr(payload))


def watch(driver: CoreDriver, *sources: str, channels: tuple[str, ...] = ()) -> tuple[CoreServices, Recorder]:
    """The ``record`` component's services and one ``Recorder`` subscribed to ``sources``
    (after the observation grant when ``observations`` is among them)."""
    core = driver.core("record")
    if "observations" in sources:
        core.request_grant("observation")
    seen = Recorder()
    for source in sources:
        core.subscribe(source, seen, channels=channels if source == "observations" else ())
    return core, seen


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
