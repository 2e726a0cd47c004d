"""The terminal coordinator: completion requests, the cut, and finalizers under a deadline.

Completion (``request_completion``): the first request wins and is the Run's completion;
later requests return ``False`` and change nothing.

Finalizers run concurrently, one thread each, after the cut.  Each gets the same
absolute deadline: the cut instant plus ``min(requested_timeout_s, max_timeout_s)``.
When no thread can start (Python 3.12+ refuses new threads once the interpreter
finalizes, e.g. in a ``weakref.finalize`` at exit), a finalizer runs inline on the
calling thread, handed the same deadline; one that returns after it is row 3.

    | # | finalizer                              | its outcome                               |
    |---|----------------------------------------|-------------------------------------------|
    | 1 | returns a FinalizerResult in time      | that result                               |
    | 2 | raises                                 | ok=False, the exception as the reason     |
    | 3 | still running at its deadline          | cancel(); ok=False "timed out"; Core then |
    |   |                                        | revokes its leases (deadline-bounded)     |

Run status from the completion and the finalizer outcomes (first matching row wins):

    | # | condition                                  | status     |
    |---|--------------------------------------------|------------|
    | 1 | completion kind failed (its reason)        | failed     |
    | 2 | a *required* finalizer is not ok           | failed     |
    | 3 | completion kind cancelled                  | cancelled  |
    | 4 | completion kind stopped                    | stopped    |
    | 5 | otherwise (normal)                         | succeeded  |

Row 2 is required-finalizer precedence: it holds even when another source won
completion with ``normal`` (row 1 comes first only to report the root cause).  A
``failed`` completion that keeps what was recorded (``keep_recorded``, contract FR2) is
still row 1: the Run failed, even though its recording may be committed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

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

__all__ = ["FinalizerOutcome", "Registration", "TerminalCoordinator", "run_status"]


@attrs.define(eq=False)
class Registration:
    """A registered finalizer (``unregister`` is idempotent and refused after the cut)."""

    coordinator: TerminalCoordinator
    request: FinalizerRegistrationRequest
    finalizer: Finalizer
    owner: str = ""  # the Core services view (component alias) that registered it
    active: bool = True

    def unregister(self) -> None:
        """Withdraw the finalizer before the cut."""
        self.coordinator._unregister(self)


@attrs.frozen
class FinalizerOutcome:
    """What one finalizer did at the terminal cut."""

    request: FinalizerRegistrationRequest
    result: FinalizerResult
    timed_out: bool = False
    cleanup_in_time: bool = True


def run_status(completion: CompletionRequest, outcomes: tuple[FinalizerOutcome, ...]) -> tuple[str, str | None]:
    """The Run status and its one-line reason (the module's second table)."""
    if completion.kind is CompletionKind.FAILED:
        return "failed", f"{completion.requested_by}: {completion.reason}"
    for outcome in outcomes:
        if outcome.request.required and not outcome.result.ok:
            return "failed", f"{outcome.request.component}: {outcome.result.reason or 'failed'}"
    if completion.kind is CompletionKind.CANCELLED:
        return "cancelled", completion.reason
    if completion.kind is CompletionKind.STOPPED:
        return "stopped", completion.reason
    return "succeeded", None


@attrs.define(eq=False)
class TerminalCoordinator:
    """Owns completion, finalizer registration and the finalizer deadline."""

    max_timeout_s: float = 300.0
    revoke_grace_s: float = 5.0  # bound on Core's lease revocation after a late finalizer
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _completion: CompletionRequest | None = attrs.field(init=False, default=None)
    _completed: threading.Event = attrs.field(init=False, factory=threading.Event)
    _registrations: list[Registration] = attrs.field(init=False, factory=list)
    _cut_taken: bool = attrs.field(init=False, default=False)

    # -- completion -----------------------------------------------------------------
    def request_completion(self, request: CompletionRequest) -> bool:
        """Ask to complete the Run; ``True`` when this request won."""
        with self._lock:
            if self._completion is not None:
                return False
            self._completion = request
        self._completed.set()
        return True

    @property
    def completion(self) -> CompletionRequest | None:
        """The winning completion request, if any."""
        return self._completion

    def completion_requested(self) -> bool:
        """Cheap check for the simulation loop."""
        return self._completed.is_set()

    def wait_completion(self, timeout: float | None = None) -> bool:
        """Block until some completion request arrives."""
        return self._completed.wait(timeout)

    # -- registration ---------------------------------------------------------------
    def register(
        self, request: FinalizerRegistrationRequest, finalizer: Finalizer, owner: str = ""
    ) -> Registration:
        """Register a finalizer; refused once the cut is taken."""
        if request.requested_timeout_s <= 0:
            raise TerminalError(f"register_finalizer: requested_timeout_s must be > 0 ({request.component})")
        with self._lock:
            if self._cut_taken:
                raise TerminalError(f"register_finalizer: {request.component} after the terminal cut")
            registration = Registration(self, request, finalizer, owner)
            self._registrations.append(registration)
        return registration

    def _unregister(self, registration: Registration) -> None:
        with self._lock:
            if not registration.active:
                return
            if self._cut_taken:
                raise TerminalError("unregister: after the terminal cut")
            registration.active = False
            self._registrations.remove(registration)

    def registrations(self) -> tuple[Registration, ...]:
        """The active registrations."""
        with self._lock:
            return tuple(self._registrations)

    def mark_cut(self) -> None:
        """The cut is taken: registrations are frozen."""
        with self._lock:
            self._cut_taken = True

    # -- finalization -----------------------------------------------------------------
    def run_finalizers(
        self,
        cut: TerminalSemanticCut,
        revoke: Callable[[str, float], bool],
    ) -> tuple[FinalizerOutcome, ...]:
        """Run every finalizer to its absolute deadline; cancel and revoke the late ones.

        ``revoke(owner, deadline)`` is Core's bounded revocation of that owner's leases
        and returns whether it finished by ``deadline``.
        """
        self.mark_cut()
        started = self.clock()
        runs: list[tuple[Registration, float, threading.Thread | None, list[FinalizerResult | BaseException]]] = []
        for registration in self.registrations():
            timeout = min(registration.request.requested_timeout_s, self.max_timeout_s)
            deadline = started + timeout
            box: list[FinalizerResult | BaseException] = []
            thread = threading.Thread(
                target=_call_finalizer,
                args=(registration.finalizer, cut, deadline, box),
                name=f"finalizer-{registration.request.component}",
                daemon=True,
            )
            try:
                thread.start()
            except RuntimeError:  # no new thread (Python 3.12+ at interpreter exit): run it here
                _call_finalizer(registration.finalizer, cut, deadline, box)
                if self.clock() > deadline:
                    box.clear()  # it returned after its deadline: row 3, as a thread still running
                runs.append((registration, deadline, None, box))
                continue
            runs.append((registration, deadline, thread, box))
        outcomes: list[FinalizerOutcome] = []
        for registration, deadline, ran_in, box in runs:
            if ran_in is not None:
                ran_in.join(max(0.0, deadline - self.clock()))
            request = registration.request
            if (ran_in is not None and ran_in.is_alive()) or not box:
                registration.finalizer.cancel()
                in_time = revoke(registration.owner or request.component, self.clock() + self.revoke_grace_s)
                result = FinalizerResult(
                    component=request.component,
                    ok=False,
                    reason=f"finalizer timed out at its deadline ({deadline - started:g} s) and was cancelled",
                )
                outcomes.append(FinalizerOutcome(request, result, timed_out=True, cleanup_in_time=in_time))
                continue
            value = box[0]
            if isinstance(value, BaseException):
                result = FinalizerResult(request.component, ok=False, reason=f"finalizer raised: {value}")
            else:
                result = value
            outcomes.append(FinalizerOutcome(request, result))
        return tuple(outcomes)


def _call_finalizer(
    finalizer: Finalizer,
    cut: TerminalSemanticCut,
    deadline: float,
    box: list[FinalizerResult | BaseException],
) -> None:
    try:
        box.append(finalizer.finalize(cut, deadline))
    except BaseException as exc:  # reported as the finalizer's failure
        box.append(exc)
