"""A minimal consumer plugin for exercising a Core: subscribe, capture, finalize, commit.

Not the Record plugin: it writes every envelope it received through the cut as one
JSON line to ``<name>`` through the output transaction, and checks it consumed every
source exactly through the cut.  Host tests and smoke runs use it; its knobs
(:class:`ProbeOptions`) inject the terminal behaviours the contract must handle.

    | # | finalize mode | behaviour                                                        |
    |---|---------------|------------------------------------------------------------------|
    | 1 | ok            | check the cut, write, seal, readback, confirm, commit            |
    | 2 | fail          | report ok=False without touching the lease                      |
    | 3 | raise         | raise from finalize                                              |
    | 4 | hang          | block until cancelled (holding the open write lease)            |
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from fastsim_contract.protocols import CoreServices, PluginContext, Subscription, WriteLease
from fastsim_contract.values import (
    CompletionKind,
    CompletionRequest,
    Envelope,
    FinalizerRegistrationRequest,
    FinalizerResult,
    GenerationBarrier,
    ObservationTick,
    SourceKind,
    TerminalSemanticCut,
)

__all__ = ["ProbeOptions", "ProbePlugin", "create_probe"]


@attrs.frozen
class ProbeOptions:
    """How the probe behaves."""

    name: str = "probe.jsonl"
    required: bool = True
    finalize: str = "ok"  # ok | fail | raise | hang
    requested_timeout_s: float = 30.0
    complete_at_tick: int | None = None  # request completion when this tick is observed
    complete_kind: CompletionKind = CompletionKind.NORMAL
    fail_prepare: bool = False


def _plain(value: object) -> Any:
    if isinstance(value, ObservationTick):
        return {"capture_sequence": value.capture_sequence,
                "samples": {s.channel: _plain(s.value) for s in value.samples}}
    if isinstance(value, GenerationBarrier):
        return {"barrier": value.generation, "previous": value.previous}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


@attrs.define(eq=False)
class ProbePlugin:
    """The probe consumer."""

    component: str
    core: CoreServices
    options: ProbeOptions = attrs.field(factory=ProbeOptions)
    received: list[Envelope] = attrs.field(factory=list)
    subscriptions: list[Subscription] = attrs.field(factory=list)
    lease: WriteLease | None = None
    committed: bool = False
    cancelled: threading.Event = attrs.field(factory=threading.Event)
    closed: int = 0
    stopped: int = 0
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)

    def _sink(self, envelope: Envelope) -> None:
        with self._lock:
            self.received.append(envelope)
        at = self.options.complete_at_tick
        if at is not None and envelope.source is SourceKind.OBSERVATION and envelope.tick >= at:
            self.core.request_completion(
                CompletionRequest(self.options.complete_kind, f"probe asked at tick {envelope.tick}", self.component)
            )

    def prepare(self) -> None:
        """Grants, subscriptions from sequence 1, the write lease, the finalizer."""
        plan = self.core.run.capture
        self.core.request_grant("output.write_lease")
        sources = ["lifecycle", "events", "control.audit", "control.result"]
        if plan.observation_channels:
            self.core.request_grant("observation")
            sources.append("observations")
        for source in sources:
            self.subscriptions.append(self.core.subscribe(source, self._sink, from_sequence=1))
        self.lease = self.core.outputs.open_write(self.options.name)
        self.core.register_finalizer(
            FinalizerRegistrationRequest(
                self.component, self.options.required, self.options.requested_timeout_s, tuple(sources)
            ),
            self,
        )
        if self.options.fail_prepare:
            raise RuntimeError("probe: injected prepare failure")

    def start(self) -> None:
        """Nothing to start: delivery is push."""

    def _check_cut(self, cut: TerminalSemanticCut) -> str | None:
        with self._lock:
            items = list(self.received)
        sequences = sorted(e.global_sequence for e in items)
        if sequences != list(range(1, cut.final_global_sequence + 1)):
            return f"consumed {len(sequences)} items, cut says {cut.final_global_sequence}"
        last: dict[str, int] = {}
        for e in items:
            key = SourceKind.OBSERVATION.value if e.source is SourceKind.GENERATION_BARRIER else e.source.value
            last[key] = max(last.get(key, 0), e.source_sequence)
        if last != dict(cut.source_final_sequences):
            return f"per-source ends {last} differ from the cut {dict(cut.source_final_sequences)}"
        return None

    def finalize(self, cut: TerminalSemanticCut, deadline_monotonic: float) -> FinalizerResult:
        """Consume through the cut and run the output transaction (see the module table)."""
        mode = self.options.finalize
        if mode == "raise":
            raise RuntimeError("probe: injected finalize exception")
        if mode == "hang":
            self.cancelled.wait()
            return FinalizerResult(self.component, ok=False, reason="cancelled")
        if mode == "fail":
            return FinalizerResult(self.component, ok=False, reason="probe: injected finalizer failure")
        problem = self._check_cut(cut)
        if problem is not None:
            return FinalizerResult(self.component, ok=False, reason=problem)
        outputs = self.core.outputs
        lease = self.lease
        assert lease is not None  # noqa: S101 - opened in prepare
        with self._lock:
            items = sorted(self.received, key=lambda e: e.global_sequence)
        for envelope in items:
            line = {"g": envelope.global_sequence, "source": envelope.source.value, "s": envelope.source_sequence,
                    "generation": envelope.generation, "tick": envelope.tick, "payload": _plain(envelope.payload)}
            lease.write((json.dumps(line, sort_keys=True) + "\n").encode())
        outputs.seal(lease)
        readback = outputs.open_readback(lease)
        size = len(readback.read())
        readback.close()
        outputs.confirm_validation(
            readback,
            {"validator": "probe/1", "validated_bytes": size, "integrity": "structural",
             "completion_id": self.core.run.completion_id, "content_sha256": None},
        )
        name = outputs.commit(lease)
        self.committed = True
        return FinalizerResult(self.component, ok=True, reason=None, committed_name=name,
                               summary={"records": len(items), "bytes": size})

    def cancel(self) -> None:
        """Stop at once; Core owns the lease cleanup."""
        self.cancelled.set()

    def stop(self) -> None:
        """Close the subscriptions (idempotent)."""
        self.stopped += 1
        for subscription in self.subscriptions:
            subscription.close()

    def close(self) -> None:
        """Abort an uncommitted output unless cancelled (idempotent)."""
        self.closed += 1
        self.stop()
        if self.lease is not None and not self.committed and not self.cancelled.is_set():
            try:
                self.core.outputs.abort(self.lease)
            finally:
                self.lease = None


def create_probe(context: PluginContext, options: ProbeOptions | None = None) -> ProbePlugin:
    """The probe's plugin factory."""
    return ProbePlugin(context.component_id, context.core, options or ProbeOptions())
