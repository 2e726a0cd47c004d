"""Record's required finalizer: consume through the cut, then commit or abort.

Registered through Core's ``FinalizerRegistrationRequest`` (required, the authored
``finalize.requested_timeout_s``, the selected sources).  ``finalize`` runs on Core's
terminal-coordinator thread:

    | # | step                                                                        |
    |---|-----------------------------------------------------------------------------|
    | 1 | disarm the monitor (the Run is already completing)                          |
    | 2 | translate the cut to the core's ``TerminalCut`` over the selected sources   |
    | 3 | hand it to the worker, which drains every lane through the cut, flushes the |
    |   | partial batch, decides the fence and runs the output transaction           |
    | 4 | wait for the worker until the absolute deadline (or a host ``cancel``)      |
    | 5 | close the subscriptions; return ``FinalizerResult`` with the summary        |

Outcomes:

    | # | situation                           | result                                    |
    |---|-------------------------------------|-------------------------------------------|
    | 1 | committed                           | ok, committed name, summary               |
    | 2 | fence or transaction failed         | not ok, one-line reason; output aborted   |
    | 3 | deadline reached / host ``cancel``  | not ok; pumps and writer cancelled; the   |
    |   |                                     | unbounded abort path is NOT called        |
    | 4 | ``finalize`` called again           | the first result                          |

Every completion kind is recorded in the terminal fence.  A recording consumed cleanly
through the cut is committed, by completion:

    | # | completion                               | a clean recording                       |
    |---|------------------------------------------|-----------------------------------------|
    | 1 | normal, cancelled, stopped               | committed                               |
    | 2 | failed, ``keep_recorded`` (Core's data   | committed after the same fence and full |
    |   | source failed; contract FR2)             | validation; the file says ``failed``    |
    |   |                                          | with the completion's one-line reason   |
    | 3 | failed (any other: Record's own failure, | consumed and decided the same way, then |
    |   | a plugin's, the simulation's in a        | aborted: Core publishes no artifact of  |
    |   | scripted Run)                            | such a Run (the result names why)       |

Row 2 never overrides a recording failure: a latched error, a hole, a failed fence or
readback aborts as in every other row.  A Core without ``keep_recorded`` is row 3.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from fastsim_contract.values import CompletionKind, FinalizerResult, TerminalSemanticCut
from fastsim_record.core.fence import TerminalCut
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.worker import WriterWorker

__all__ = ["RecordFinalizer"]


class RecordFinalizer:
    """The ``fastsim_contract.protocols.Finalizer`` of one Record plugin instance."""

    def __init__(
        self,
        *,
        component: str,
        sources: Sequence[str],
        worker: WriterWorker,
        monitor: Monitor,
        cancel_pumps: Callable[[], None],
    ) -> None:
        self._component = component
        self._sources = tuple(sources)
        self._worker = worker
        self._monitor = monitor
        self._cancel_pumps = cancel_pumps
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._result: FinalizerResult | None = None
        self._started = False
        self.committed = False

    @property
    def result(self) -> FinalizerResult | None:
        """The result, once finalize returned."""
        return self._result

    @property
    def cancelled(self) -> bool:
        """Whether the host cancelled the finalizer."""
        return self._cancelled.is_set()

    def finalize(self, cut: TerminalSemanticCut, deadline_monotonic: float) -> FinalizerResult:
        """Rows 1-4 of the outcome table."""
        with self._lock:
            if self._result is not None or self._started:
                return self._result or self._fail("finalize already running")
            self._started = True
        started = time.perf_counter()
        self._monitor.disarm()
        finals = cut.source_final_sequences
        core_cut = TerminalCut(
            cut.final_global_sequence, {s: int(finals.get(s, 0)) for s in self._sources}
        )
        completion = cut.completion
        fence_info = {
            "final_global_sequence": cut.final_global_sequence,
            "final_generation": cut.final_generation,
            "sources": {s: int(finals.get(s, 0)) for s in self._sources},
            "completion": completion.kind.value,
            "completion_reason": completion.reason,
            "completion_by": completion.requested_by,
        }
        refuse = None
        if completion.kind is CompletionKind.FAILED and getattr(completion, "keep_recorded", False) is not True:
            refuse = (
                f"the Run completed as failed ({completion.requested_by}: {completion.reason}); "
                "Core publishes no artifact of a failed Run, so the recording was aborted"
            )
        self._worker.finish(core_cut, fence_info, refuse_commit=refuse)
        outcome = None
        while outcome is None and not self._cancelled.is_set():
            remaining = deadline_monotonic - time.monotonic()
            if remaining <= 0:
                break
            outcome = self._worker.wait(min(remaining, 0.05))
        self._cancel_pumps()
        if outcome is None:
            why = "cancelled by the host at its deadline" if self._cancelled.is_set() else "deadline reached"
            self.cancel()
            return self._finish(self._fail(
                f"finalizer {why} before the output transaction completed; "
                "Core revokes the write lease"
            ))
        summary = dict(outcome.summary)
        summary["finalize_elapsed_s"] = time.perf_counter() - started
        summary["completion"] = completion.kind.value
        self.committed = outcome.ok
        return self._finish(FinalizerResult(
            self._component, outcome.ok, outcome.reason, outcome.committed_name, summary
        ))

    def _fail(self, reason: str) -> FinalizerResult:
        return FinalizerResult(self._component, False, reason, None, self._worker.summary())

    def _finish(self, result: FinalizerResult) -> FinalizerResult:
        with self._lock:
            if self._result is None:
                self._result = result
            return self._result

    def cancel(self) -> None:
        """Host deadline: cancel pumps and writer; never call the unbounded abort path."""
        self._cancelled.set()
        self._cancel_pumps()
        self._worker.cancel()
