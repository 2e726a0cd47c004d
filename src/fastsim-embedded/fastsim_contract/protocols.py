"""The Core services Record consumes, as structural Protocols.

A Core implementation (the embedded host, a test fake, or real FastSim Core) passes
the contract suite in ``contracts/`` when it satisfies these and their written
semantics (``contracts/core-contract.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    CompletionRequest,
    Envelope,
    FinalizerRegistrationRequest,
    FinalizerResult,
    TerminalSemanticCut,
)

__all__ = [
    "CoreServices",
    "EnvelopeSink",
    "Finalizer",
    "FinalizerRegistration",
    "FlowGauge",
    "OutputService",
    "Plugin",
    "PluginContext",
    "PluginFactory",
    "ReadbackLease",
    "RunContext",
    "SinkSubscription",
    "Subscription",
    "WriteLease",
]

#: Called by Core on the publishing thread, once per envelope, in global order per source.
EnvelopeSink = Callable[[Envelope], None]




class RunContext(Protocol):
    """Run identity, timing and declared scene channels."""

    @property
    def run_id(self) -> str: ...
    @property
    def completion_id(self) -> str: ...
    @property
    def sensor_hz(self) -> float: ...
    @property
    def rate_policy(self) -> str: ...
    @property
    def physics_hz(self) -> float: ...
    @property
    def output_policy(self) -> RunOutputPolicy: ...
    @property
    def channels(self) -> Sequence[ChannelDescriptor]: ...
    @property
    def services(self) -> frozenset[str]: ...  # optional services, e.g. "fluid.audit"
    @property
    def capture(self) -> CapturePlan: ...  # the compiled global capture source mask
    @property
    def generation(self) -> int: ...  # the current Runtime generation (0 first)
    @property
    def tick(self) -> int: ...  # the last published tick (0 before the first)
    @property
    def sim_time_ns(self) -> int: ...  # simulation time of that tick


class Subscription(Protocol):
    """A live subscription; ``close`` is idempotent."""

    def close(self) -> None: ...


class WriteLease(Protocol):
    """Opaque write lease: a byte sink, never a host path or file descriptor."""

    def write(self, data: bytes | memoryview) -> int: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class ReadbackLease(Protocol):
    """Exact readback lease of one sealed write: a seekable byte source."""

    def read(self, n: int = -1) -> bytes: ...
    def seek(self, offset: int, whence: int = 0) -> int: ...
    def tell(self) -> int: ...
    def close(self) -> None: ...


class OutputService(Protocol):
    """Core-owned output transaction for one artifact name."""

    def open_write(self, name: str) -> WriteLease: ...
    def seal(self, lease: WriteLease) -> None: ...
    def open_readback(self, lease: WriteLease) -> ReadbackLease: ...
    def confirm_validation(self, lease: ReadbackLease, receipt: Mapping[str, object]) -> None: ...
    def commit(self, lease: WriteLease) -> str: ...
    def abort(self, lease: WriteLease) -> None: ...


class Finalizer(Protocol):
    """A component's terminal finalizer, run by Core's terminal coordinator."""

    def finalize(self, cut: TerminalSemanticCut, deadline_monotonic: float) -> FinalizerResult: ...
    def cancel(self) -> None: ...


class FinalizerRegistration(Protocol):
    """Handle of a registered finalizer."""

    def unregister(self) -> None: ...


class FlowGauge(Protocol):
    """A consumer's backpressure signal for unpaced Runs (contract section 10).

    Core reads ``pressed`` on its own loop thread once per tick of an unpaced Run, and
    then waits in ``wait_relieved`` (bounded slices) while it is set.  A paced Run never
    reads it.  The consumer sets it from its pumps and clears it from its own worker.
    """

    @property
    def pressed(self) -> bool: ...

    def wait_relieved(self, timeout_s: float) -> bool:
        """Block up to ``timeout_s``; ``True`` once the consumer is no longer pressed."""
        ...


class CoreServices(Protocol):
    """What Core offers a prepared plugin."""

    @property
    def run(self) -> RunContext: ...

    def subscribe(
        self,
        source: str,
        sink: EnvelopeSink,
        *,
        from_sequence: int = 1,
        channels: Sequence[str] = (),
        max_block: int = 1,
    ) -> Subscription:
        """Atomic history-plus-live subscription from ``from_sequence``.

        ``max_block`` (``observations`` only; default 1) is the largest
        :class:`~fastsim_contract.samples.ObservationBlock` the sink accepts.  A sink that
        passes ``max_block > 1`` accepts blocks AND plain ticks (contract section 4, BK1-BK8).
        A Core that predates blocks raises ``TypeError`` for the keyword.
        """
        ...

    def request_grant(self, grant: str) -> None: ...
    def register_finalizer(
        self, request: FinalizerRegistrationRequest, finalizer: Finalizer
    ) -> FinalizerRegistration: ...
    def request_completion(self, request: CompletionRequest) -> bool: ...
    def register_flow_gauge(self, gauge: FlowGauge) -> Subscription:
        """Ask Core to slow an unpaced Run while ``gauge`` is pressed (section 10)."""
        ...

    @property
    def outputs(self) -> OutputService: ...


class PluginContext(Protocol):
    """What the host hands the plugin factory."""

    @property
    def component_id(self) -> str: ...
    @property
    def config(self) -> object: ...  # the compiled component config
    @property
    def core(self) -> CoreServices: ...


class Plugin(Protocol):
    """A managed plugin's lifecycle: prepare -> start -> stop -> close."""

    def prepare(self) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...


@runtime_checkable
class PluginFactory(Protocol):
    """The ``fastsim.plugins`` entry point target."""

    def __call__(self, context: PluginContext) -> Plugin: ...


@attrs.define(eq=False)
class SinkSubscription:
    """A ready-made ``Subscription`` for Core implementations: one ``sink`` on one
    ``stream``; ``close()`` hands it to ``on_close`` (which must be idempotent)."""

    on_close: Callable[[SinkSubscription], None]
    stream: str
    sink: Callable[[Any], None]
    closed: bool = False

    def close(self) -> None:
        """Stop live delivery (idempotent)."""
        self.on_close(self)
