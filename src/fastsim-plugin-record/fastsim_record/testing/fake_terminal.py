"""The fake Core's terminal coordinator and flow control (rules 6-8 of ``fake_core``).

A mixin of :class:`fastsim_record.testing.fake_core.FakeCore`: completion, the exact
cut, finalizers to an absolute deadline, Run status, and ``end_tick`` for unpaced Runs.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from fastsim_contract.payloads import FrozenDict
from fastsim_contract.protocols import Finalizer
from fastsim_contract.values import (
    CompletionKind,
    CompletionRequest,
    FinalizerResult,
    TerminalSemanticCut,
)
from fastsim_record.testing.fake_state import FakeState

if TYPE_CHECKING:
    from fastsim_record.testing.fake_services import Registration

__all__ = ["FakeTerminal"]


class FakeTerminal(FakeState):
    """Terminal coordination of the fake Core (a mixin; the state is ``FakeCore``'s)."""

    def end_tick(self, *, paced: bool = False) -> float:
        """Rule 8: the end of a tick; the seconds spent waiting on pressed gauges."""
        if paced:
            return 0.0
        started = time.monotonic()
        for registration in list(self.flow_gauges):
            deadline = time.monotonic() + self.flow_stall_s
            if registration.gauge.pressed:
                self.flow_waits += 1
            while registration.gauge.pressed and not self._completed.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    registration.close()
                    self.flow_released.append(registration.gauge)
                    break
                registration.gauge.wait_relieved(min(0.05, remaining))
        return time.monotonic() - started

    # -- terminal -----------------------------------------------------------------------
    def wait_completion(self, timeout: float) -> CompletionRequest | None:
        """Wait until some completion request won."""
        self._completed.wait(timeout)
        return self.winner

    def take_cut(self) -> TerminalSemanticCut:
        """Seal publishing and return the exact cut (a NORMAL completion if none won)."""
        if self.final_cut is not None:
            return self.final_cut
        if self.winner is None:
            self.request_completion(CompletionRequest(CompletionKind.NORMAL, "run ended", "host"))
        winner = self.winner
        if winner is None:  # pragma: no cover - set just above
            raise RuntimeError("no completion")
        self.publish("lifecycle", {
            "event": "run.stopping", "completion": winner.kind.value, "reason": winner.reason,
        })
        with self._lock:
            self.sealed = True
            self.flow_gauges.clear()
            finals = FrozenDict(dict(self.source_sequences))
            self.final_cut = TerminalSemanticCut(self.global_sequence, finals, winner, self.generation)
        return self.final_cut

    def cut(self) -> TerminalSemanticCut:
        """The cut (taken once)."""
        return self.take_cut()

    def terminate(
        self,
        kind: CompletionKind = CompletionKind.NORMAL,
        reason: str = "done",
        *,
        timeout_s: float | None = None,
    ) -> list[FinalizerResult]:
        """Request completion (host side), cut, and run every finalizer (rule 7)."""
        self.request_completion(CompletionRequest(kind, reason, "host"))
        cut = self.take_cut()
        started = time.monotonic()
        runs: list[tuple[Registration, float, threading.Thread, list[Any]]] = []
        for registration in self.registrations:
            if not registration.active:
                continue
            budget = min(registration.request.requested_timeout_s, self.max_finalizer_timeout_s)
            if timeout_s is not None:
                budget = timeout_s
            deadline = started + budget
            box: list[Any] = []
            thread = threading.Thread(
                target=_call, args=(registration.finalizer, cut, deadline, box),
                name=f"fake-finalizer-{registration.request.component}", daemon=True,
            )
            thread.start()
            runs.append((registration, deadline, thread, box))
        results: list[FinalizerResult] = []
        for registration, deadline, thread, box in runs:
            thread.join(max(0.0, deadline - time.monotonic()))
            component = registration.request.component
            if thread.is_alive() or not box:
                registration.finalizer.cancel()
                registration.timed_out = True
                self.outputs.revoke_open()
                results.append(FinalizerResult(component, False, "finalizer deadline expired; cancelled"))
            elif isinstance(box[0], BaseException):
                results.append(FinalizerResult(component, False, f"finalizer raised: {box[0]}"))
            else:
                results.append(box[0])
        self.results.extend(results)
        return results

    def status(self) -> tuple[str, str | None]:
        """The Run status: required-finalizer precedence, then the completion kind."""
        active = [r for r in self.registrations if r.active]
        for registration, result in zip(active, self.results):
            if registration.request.required and not result.ok:
                return "failed", f"{result.component}: {result.reason or 'failed'}"
        winner = self.winner
        if winner is None or winner.kind is CompletionKind.NORMAL:
            return "succeeded", None
        return winner.kind.value, winner.reason

    def run_failed(self) -> bool:
        """True when the Run's status is failed."""
        return self.status()[0] == "failed"


def _call(finalizer: Finalizer, cut: TerminalSemanticCut, deadline: float, box: list[Any]) -> None:
    try:
        box.append(finalizer.finalize(cut, deadline))
    except BaseException as exc:  # reported as the finalizer's failure
        box.append(exc)


