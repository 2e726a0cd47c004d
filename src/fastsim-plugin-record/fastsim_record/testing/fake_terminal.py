"""The fake Core's terminal coordination (rules 6-7 of ``fake_core``), as two parts of
:class:`fastsim_record.testing.fake_core.FakeCore` that each own their state:

    | part           | owns                                 | job                               |
    |----------------|--------------------------------------|-----------------------------------|
    | ``Terminal``   | completion requests, the winner, the | first request wins; the exact cut |
    |                | cut                                  | seals the bus                     |
    | ``Finalizers`` | registrations, results               | run them to an absolute deadline; |
    |                |                                      | the Run's status                  |
"""

from __future__ import annotations

import threading
import time
from typing import Any

import attrs

from fastsim_contract.errors import TerminalError
from fastsim_contract.protocols import Finalizer
from fastsim_contract.values import (
    CompletionKind,
    CompletionRequest,
    FinalizerRegistrationRequest,
    FinalizerResult,
    TerminalSemanticCut,
)
from fastsim_record.testing.fake_bus import FakeBus, check_fault
from fastsim_record.testing.fake_output import FakeOutputService

__all__ = ["Finalizers", "Registration", "Terminal"]


@attrs.define(eq=False)
class Terminal:
    """Completion (the first request wins) and the exact cut (rule 6)."""

    bus: FakeBus
    completions: list[CompletionRequest] = attrs.field(factory=list)
    winner: CompletionRequest | None = None
    final_cut: TerminalSemanticCut | None = None
    completed: threading.Event = attrs.field(factory=threading.Event)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def request_completion(self, request: CompletionRequest) -> bool:
        """First completion request wins (rule 6)."""
        with self._lock:
            self.completions.append(request)
            if self.winner is not None or self.bus.sealed:
                return False
            self.winner = request
        self.completed.set()
        return True

    def wait_completion(self, timeout: float) -> CompletionRequest | None:
        """Wait until some completion request won."""
        self.completed.wait(timeout)
        return self.winner

    def failed(self) -> bool:
        """Whether a FAILED completion won that refuses commits (not ``keep_recorded``: FR1-FR2)."""
        winner = self.winner
        return winner is not None and winner.kind is CompletionKind.FAILED and not winner.keep_recorded

    def take_cut(self) -> TerminalSemanticCut:
        """Seal publishing and return the exact cut (a NORMAL completion if none won)."""
        if self.final_cut is not None:
            return self.final_cut
        if self.winner is None:
            self.request_completion(CompletionRequest(CompletionKind.NORMAL, "run ended", "host"))
        winner = self.winner
        if winner is None:  # pragma: no cover - set just above
            raise RuntimeError("no completion")
        self.bus.publish("lifecycle", {
            "event": "run.stopping", "completion": winner.kind.value, "reason": winner.reason,
        })
        self.final_cut = self.bus.seal(winner)
        return self.final_cut


@attrs.define(eq=False)
class Registration:
    """One registered finalizer."""

    bus: FakeBus
    request: FinalizerRegistrationRequest
    finalizer: Finalizer
    active: bool = True
    timed_out: bool = False

    def unregister(self) -> None:
        """Withdraw the finalizer (refused after the cut)."""
        if self.bus.sealed and self.active:
            raise TerminalError("unregister after the terminal cut")
        self.active = False


@attrs.define(eq=False)
class Finalizers:
    """Registered finalizers, run concurrently to an absolute deadline (rule 7)."""

    bus: FakeBus
    outputs: FakeOutputService  # a late finalizer's leases are revoked
    faults: set[str]
    max_timeout_s: float
    registrations: list[Registration] = attrs.field(factory=list)
    results: list[FinalizerResult] = attrs.field(factory=list)

    def register(self, request: FinalizerRegistrationRequest, finalizer: Finalizer) -> Registration:
        """Register a finalizer (refused after the cut)."""
        check_fault(self.faults, "register_finalizer")
        if not isinstance(request, FinalizerRegistrationRequest):
            raise TypeError("register_finalizer takes a FinalizerRegistrationRequest")
        registration = Registration(self.bus, request, finalizer)
        self.bus.before_cut("register_finalizer", lambda: self.registrations.append(registration))
        return registration

    def run(self, cut: TerminalSemanticCut, timeout_s: float | None = None) -> list[FinalizerResult]:
        """Every active finalizer on its own thread; late ones are cancelled, their leases revoked."""
        started = time.monotonic()
        runs: list[tuple[Registration, float, threading.Thread, list[Any]]] = []
        for registration in self.registrations:
            if not registration.active:
                continue
            budget = min(registration.request.requested_timeout_s, self.max_timeout_s)
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

    def status(self, winner: CompletionRequest | None) -> tuple[str, str | None]:
        """The Run status: required-finalizer precedence, then the completion kind."""
        active = [r for r in self.registrations if r.active]
        for registration, result in zip(active, self.results):
            if registration.request.required and not result.ok:
                return "failed", f"{result.component}: {result.reason or 'failed'}"
        if winner is None or winner.kind is CompletionKind.NORMAL:
            return "succeeded", None
        return winner.kind.value, winner.reason


def _call(finalizer: Finalizer, cut: TerminalSemanticCut, deadline: float, box: list[Any]) -> None:
    try:
        box.append(finalizer.finalize(cut, deadline))
    except BaseException as exc:  # reported as the finalizer's failure
        box.append(exc)
