"""The state every part of the fake Core shares, declared once for the type checker.

:class:`fastsim_record.testing.fake_core.FakeCore` holds it (as attrs fields) and is
assembled from mixins that each own one concern: ``FakeBus`` (sequencing and delivery),
``ServicesMixin`` (grants, faults, registrations) and ``FakeTerminal`` (completion, the
cut, finalizers, flow control).  Each mixin derives from :class:`FakeState`, so every
attribute and cross-mixin call is typed without the mixins importing one another.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.protocols import FlowGauge
from fastsim_contract.values import (
    CapturePlan,
    ChannelDescriptor,
    CompletionRequest,
    Envelope,
    FinalizerResult,
    TerminalSemanticCut,
)

if TYPE_CHECKING:
    from fastsim_record.testing.fake_bus import Subscription
    from fastsim_record.testing.fake_output import FakeOutputService
    from fastsim_record.testing.fake_services import Gauge, Registration

__all__ = ["FakeState"]


class FakeState:
    """Attribute declarations only; ``FakeCore`` defines the fields and their defaults."""

    channels: Sequence[ChannelDescriptor]
    capture: CapturePlan | None
    output_policy: RunOutputPolicy
    sensor_hz: float
    prepare_faults: set[str]
    outputs: FakeOutputService
    services: frozenset[str]
    portable_sizes: bool
    max_finalizer_timeout_s: float
    flow_stall_s: float
    generation: int
    tick: int
    global_sequence: int
    sealed: bool
    history_open: bool
    control_started: bool
    source_sequences: dict[str, int]
    history: dict[str, list[Envelope]]
    subscribers: dict[str, list[Subscription]]
    subscribe_calls: list[tuple[str, int, tuple[str, ...]]]
    grants: list[str]
    registrations: list[Registration]
    winner: CompletionRequest | None
    results: list[FinalizerResult]
    held: dict[str, list[Envelope]]
    final_cut: TerminalSemanticCut | None
    flow_gauges: list[Gauge]
    flow_released: list[FlowGauge]
    flow_waits: int
    _lock: threading.Lock
    _source_locks: dict[str, threading.RLock]
    _completed: threading.Event

    if TYPE_CHECKING:  # implemented by FakeCore and the other mixins

        @property
        def plan(self) -> CapturePlan: ...
        def request_completion(self, request: CompletionRequest) -> bool: ...
        def publish(
            self, source: str, payload: Mapping[str, object], *, portable_size: int | None = -1
        ) -> Envelope | None: ...
        def _fault(self, step: str) -> None: ...
