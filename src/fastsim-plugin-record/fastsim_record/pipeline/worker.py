"""The writer worker: the one thread that owns the write lease.

It drains every lane, merges by global sequence, encodes each payload exactly once
(``record_encoder.RecordEncoder``), and writes bounded batches by the core's batching
rules (``batch_writer.BatchWriter``); this module is the thread around them.  Publication never waits on
it: pumps only ``try_publish``; a slow or stalled output just fills the lanes, and a
full ``fail_run`` lane latches a fatal error at the pump.

Loop step (``_step``), repeated on every wake-up or poll tick:

    | # | step                                                                   |
    |---|------------------------------------------------------------------------|
    | 1 | drain each lane as held, and its gaps, under the lane lock             |
    | 2 | push envelopes, runs of ticks (``columns.RunBuilder``) and gaps into   |
    |   | the ordered merge; a duplicate is fatal                                |
    | 3 | release in global order: gaps -> GAP records, barriers close the batch  |
    |   | (B5) and become BARRIER records, items are encoded once -> DATA         |
    |   | (``RecordEncoder``); a run is written column-wise (``add_columns``)     |
    | 4 | account each record in the Batcher; write every batch it closes        |
    |   | (``BatchWriter``)                                                       |
    | 5 | after a fatal error nothing more is encoded or written                 |
    | 6 | after ``YIELD_AFTER_S`` of work the worker offers the GIL back (sleep 0)|
    |   | or after ``BACKLOG_YIELD_AFTER_S`` when it is behind (a long release),  |
    |   | and never while the ``PressureGauge`` is pressed (a lane at its mark,   |
    |   | ``pumps``); an RGB encode restarts the slice: the codec ran without the |
    |   | GIL                                                                     |
    | 7 | more items held behind a hole than all lanes hold together is fatal    |
    |   | (the merge never grows without bound)                                  |
    | 8 | after each drain, relieve the ``PressureGauge`` the pumps pressed: an  |
    |   | unpaced host waiting on it (contract section 10) resumes               |

Finishing (``finish(cut)``, run on this thread): drain until the lanes are empty, close
the partial batch (B6), decide the fence (F1-F6), then either run the output
transaction through the sink (seal, readback validation, confirm, commit) or abort.
``cancel`` (host deadline) stops the loop without touching the output at all.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from fastsim_record.core.batching import BatchLimits, FlushReason
from fastsim_record.core.captured import CapturedItem, CapturedRun, EnvelopeKind, LaneName
from fastsim_record.core.fence import (
    FenceDecision,
    FenceEvidence,
    TerminalCut,
    decide,
    gather_evidence,
)
from fastsim_record.core.gaps import GapRecord
from fastsim_record.core.merge import OrderedMerge
from fastsim_record.errors import OutputError, RecordError, RecordingFailed
from fastsim_record.pipeline.batch_writer import BatchWriter
from fastsim_record.pipeline.camera_stage import CameraStage
from fastsim_record.pipeline.columns import RunBuilder
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import LaneHandle, PressureGauge
from fastsim_record.pipeline.record_encoder import RecordEncoder
from fastsim_record.ports.sinks import OutRecord, PayloadEncoder, RecordColumns, RecordSink

__all__ = [
    "BACKLOG_ITEMS", "BACKLOG_YIELD_AFTER_S", "POLL_S", "YIELD_AFTER_S", "FinishOutcome", "WriterWorker",
]

#: The worker sleeps on its wake event and drains on this poll; pumps wake it earlier
#: only under lane pressure (a lane at its mark, ``pumps``), finishing and stopping at
#: once.  Each wake-up runs the worker's code cold and pulls the Python objects it shares
#: with the simulation thread (types, the lanes, the envelopes) into its own core's
#: cache, which the simulation thread then pays for; so fewer, larger drains cost the
#: simulation less.  Measured with ``bench_sustained``'s scene (120 Hz, 90 channels,
#: 1 ms of host work), a 1-s poll instead of 0.1 s took ~9 us/tick off the simulation
#: thread and ~19 us/tick off the worker.  One second matches the default batch span
#: (``batching.max_sim_duration_s``), so batches still close about once a second.
POLL_S = 1.0
#: The worker offers the GIL back after this much continuous work, so a simulation
#: thread coming back from C work waits at most this long behind encoding, while a
#: worker that only gets forced GIL switches still makes progress in each of them.
YIELD_AFTER_S = 0.0005
#: When one release holds this many items the worker is behind (the host holds the GIL
#: and the worker only gets forced switches): it then works this long per GIL slice.
BACKLOG_ITEMS = 64
BACKLOG_YIELD_AFTER_S = 0.002

_BARRIER = EnvelopeKind.BARRIER


@attrs.frozen
class FinishOutcome:
    """What finishing produced: committed or not, why, and the summary facts."""

    ok: bool
    reason: str | None
    committed_name: str | None
    summary: Mapping[str, object]


class WriterWorker:
    """Owns the sink (and so the write lease); everything here runs on one thread."""

    def __init__(
        self,
        *,
        lanes: Mapping[LaneName, LaneHandle],
        wake: threading.Event,
        encoders: Mapping[str, PayloadEncoder],
        barrier_encoder: Callable[[object], bytes],
        sink: RecordSink,
        limits: BatchLimits,
        monitor: Monitor,
        poll_s: float = POLL_S,
        camera_stage: CameraStage | None = None,
        gauge: PressureGauge | None = None,
    ) -> None:
        self._lanes = dict(lanes)
        self._wake = wake
        self._gauge = gauge if gauge is not None else PressureGauge()
        self._records = RecordEncoder(encoders, barrier_encoder, camera_stage)
        self._runs = RunBuilder(encoders if getattr(sink, "accepts_columns", False) else {})  # ColumnSink
        self._writer = BatchWriter(sink, limits)
        self._monitor = monitor
        self._poll = poll_s
        self._merge = OrderedMerge()
        self._pushed = 0
        #: more held-back items than every lane can hold means the hole will not close
        self._hold_limit = sum(h.lane.spec.max_items for h in self._lanes.values())
        self._failed: RecordError | None = None
        self._stop = False
        self._cancelled = threading.Event()
        self._cut: tuple[TerminalCut, Mapping[str, object], str | None] | None = None
        self._done = threading.Event()
        self._outcome: FinishOutcome | None = None
        self._thread = threading.Thread(target=self._run, name="record-writer", daemon=True)
        self._cpu_start: float | None = None
        self.worker_cpu_s = 0.0

    # -- control (any thread) --------------------------------------------------------
    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    @property
    def thread(self) -> threading.Thread:
        """The worker thread (tests check which thread encodes)."""
        return self._thread

    def finish(
        self, cut: TerminalCut, fence_info: Mapping[str, object], *, refuse_commit: str | None = None
    ) -> None:
        """Ask the thread to consume through ``cut`` and run the output transaction.

        ``refuse_commit`` (a reason) consumes and decides as usual but aborts instead of
        committing: Core never publishes the artifact of a failed Run (``finalizer`` rows 2-3).
        """
        self._cut = (cut, fence_info, refuse_commit)
        self._wake.set()

    def wait(self, timeout: float | None) -> FinishOutcome | None:
        """The finish outcome, or None if it is not ready within ``timeout``."""
        if self._done.wait(timeout):
            return self._outcome
        return None

    def stop(self) -> None:
        """Stop the loop without finishing (close before finalization)."""
        self._stop = True
        self._wake.set()

    def cancel(self) -> None:
        """Host deadline: stop at once; never touch the output again."""
        self._cancelled.set()
        self._stop = True
        self._wake.set()

    @property
    def cancelled(self) -> bool:
        """Whether ``cancel`` was called."""
        return self._cancelled.is_set()

    def join(self, timeout: float | None) -> bool:
        """Join the thread; True when it has ended."""
        if self._thread.ident is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def error(self) -> RecordError | None:
        """The worker's own fatal error, if any."""
        return self._failed

    # -- the thread --------------------------------------------------------------------
    def _run(self) -> None:
        wake = self._wake
        gauge = self._gauge
        self._cpu_start = time.thread_time()
        try:
            while True:
                wake.wait(self._poll)
                wake.clear()
                if self._cancelled.is_set():
                    return
                self._step()
                gauge.relieve()  # rule 8: the lanes were just emptied
                if self._cut is not None:
                    self._finish(*self._cut)
                    return
                if self._stop:
                    return
        except BaseException as exc:  # the thread must never die silently
            self._fail(RecordingFailed(f"writer worker crashed: {exc!r}"))
            if self._cut is not None and not self._done.is_set():
                self._complete(FinishOutcome(False, str(self._failed), None, self._summary()))
        finally:
            gauge.relieve()  # an ended worker never holds an unpaced host up
            if not self._done.is_set() and self._cut is not None and not self.cancelled:
                self._complete(FinishOutcome(False, str(self._failed or "worker ended"), None, self._summary()))

    def _fail(self, error: RecordError) -> None:
        if self._failed is None:
            self._failed = error
        self._monitor.latch(error)

    def _drain(self) -> bool:
        """Rules 1-2: move everything admitted so far into the merge; True if any."""
        moved = False
        merge = self._merge
        for handle in self._lanes.values():
            with handle.lock:
                ticks, held = handle.lane.depth, handle.lane.drain_held()  # depth: a block carrier counts its ticks
                gaps = handle.lane.take_gaps()
            if not held and not gaps:
                continue
            moved = True
            self._pushed += ticks + len(gaps)  # envelopes, as the merge counts runs (rule 7)
            for gap in gaps:
                conflict = merge.explain(gap)
                if conflict is not None:
                    self._fail(RecordingFailed(conflict.reason))
            for conflict in merge.push_all(self._runs.split(held, handle.converters.materialize)):
                self._fail(RecordingFailed(conflict.reason))
        return moved

    def _step(self) -> None:
        merge = self._merge
        while self._drain():
            released = merge.release_entries()
            if released and self._failed is None:
                self._write_released(released)
            held = self._pushed - merge.released_items
            if held > self._hold_limit and self._failed is None:  # rule 7
                self._fail(RecordingFailed(
                    f"unexplained global sequence hole at {merge.next_sequence}: "
                    f"{held} records held behind it"
                ))

    def _write_released(self, released: list[CapturedItem | CapturedRun | GapRecord]) -> None:
        """Rules 3-4 (and 6: the GIL hand-off); the first failure ends the release."""
        records, writer, clock = self._records, self._writer, time.perf_counter
        # keeping up: offer the GIL back often; behind (a GIL-holding host): work longer;
        # pressed (a lane at its pressure mark): never offer it, so a falling-behind
        # worker is not talked out of its share until a lane overflows (the interpreter's
        # switch interval still hands the GIL to a waiting simulation thread)
        if self._gauge.pressed:
            slice_s = math.inf
        elif len(released) < BACKLOG_ITEMS:
            slice_s = YIELD_AFTER_S
        else:
            slice_s = BACKLOG_YIELD_AFTER_S
        slice_end = clock() + slice_s
        data, add = records.data, writer.add
        try:
            for item in released:
                if clock() > slice_end:  # offer the GIL to a waiting simulation thread
                    time.sleep(0)
                    slice_end = clock() + slice_s
                record: OutRecord | RecordColumns
                if type(item) is CapturedItem and item.kind is not _BARRIER:  # the common record first
                    record, released_gil = data(item)
                    if released_gil:  # the codec ran without the GIL: that was the yield
                        slice_end = clock() + slice_s
                elif isinstance(item, CapturedRun):  # a run of ticks: its records column-wise
                    record = records.run(item)
                elif isinstance(item, GapRecord):
                    record = records.gap(item)
                else:  # a barrier
                    writer.close_generation(item.generation)  # B5
                    record = records.barrier(item)
                add(record)
        except RecordError as exc:
            self._fail(exc)

    # -- finishing ---------------------------------------------------------------------
    def evidence(self, through: int) -> FenceEvidence:
        """What the worker knows for the fence, holes looked for up to ``through``."""
        merge = self._merge
        fatal: list[str] = []
        if self._failed is not None:
            fatal.append(str(self._failed))
        monitor_error = self._monitor.error
        if monitor_error is not None and str(monitor_error) not in fatal:
            fatal.append(str(monitor_error))
        for handle in self._lanes.values():
            reason = handle.lane.fatal
            if reason is not None and reason not in fatal:
                fatal.append(reason)
        return gather_evidence(
            None, merge, self._records.ledger, through=through,
            calibration_violations=self._records.calibration_violations, fatal_errors=tuple(fatal),
        )

    def _finish(
        self, cut: TerminalCut, fence_info: Mapping[str, object], refuse_commit: str | None
    ) -> None:
        started = time.perf_counter()
        self._step()
        if self._failed is None:
            try:
                self._writer.close(FlushReason.FINALIZE)  # B6
            except RecordError as exc:
                self._fail(exc)
        self._records.at_cut()  # calibration obligations due at the cut (fence F5)
        evidence = self.evidence(cut.final_global_sequence)
        decision = decide(cut, evidence)
        if self._cancelled.is_set():
            return
        if not decision.commit or refuse_commit is not None:
            self._abort()
            # the latched fatal error is the root cause; the fence text stays in the summary
            reason = evidence.fatal_errors[0] if evidence.fatal_errors else decision.reason
            if decision.commit and refuse_commit is not None:
                reason = refuse_commit
            self._complete(FinishOutcome(False, reason, None, self._summary(decision, started)))
            return
        fence = {**fence_info, "decision": "commit", "degraded": decision.degraded,
                 "released_through": self._merge.released_through, **self._records.fence_marks()}
        try:
            facts = self._writer.sink.finish(degraded=decision.degraded, fence=fence)
        except RecordError as exc:
            self._fail(exc)
        except Exception as exc:
            self._fail(OutputError(f"output transaction failed: {exc}"))
        else:
            summary = self._summary(decision, started)
            summary.update(facts)
            name = facts.get("committed_name")
            self._complete(FinishOutcome(True, None, str(name) if name else None, summary))
            return
        if self._cancelled.is_set():
            return
        self._abort()
        self._complete(FinishOutcome(False, str(self._failed), None, self._summary(decision, started)))

    def _abort(self) -> None:
        try:
            self._writer.sink.abort()
        except Exception as exc:  # the failure is already the reason; keep it
            self._monitor.latch(OutputError(f"abort failed: {exc}"))

    def _complete(self, outcome: FinishOutcome) -> None:
        self._outcome = outcome
        self._done.set()

    def _summary(
        self, decision: FenceDecision | None = None, started: float | None = None
    ) -> dict[str, Any]:
        lanes: dict[str, Any] = {}
        for name, handle in self._lanes.items():
            with handle.lock:
                c = handle.lane.counters()
            lanes[name.value] = {
                "capacity_items": c.capacity_items, "capacity_bytes": c.capacity_bytes,
                "depth": c.depth, "high_water": c.high_water, "enqueued": c.enqueued,
                "dequeued": c.dequeued, "lost": c.lost, "failures": c.failures,
                "degradations": c.degradations,
            }
        if self._cpu_start is not None and threading.current_thread() is self._thread:
            self.worker_cpu_s = time.thread_time() - self._cpu_start
        summary: dict[str, Any] = {
            "worker_cpu_s": self.worker_cpu_s, **self._writer.counters(),
            "gaps": self._records.ledger.gap_count, "lanes": lanes,
        }
        if decision is not None:
            summary["degraded"] = decision.degraded
            summary["fence"] = decision.reason
        if started is not None:
            summary["finalize_elapsed_s"] = time.perf_counter() - started
        return summary

    def summary(self) -> dict[str, Any]:
        """A summary snapshot (any thread; counters may be mid-update)."""
        return self._summary()
