"""The worker's batch writer: bounded batches by the core's batching rules, with counters.

Records arrive in global order (worker rule 4).  The core ``Batcher`` decides where a
batch closes (items, bytes, simulated span; a generation change at a barrier, B5; the
cut, B6); every closed batch goes to the sink (and so through the write lease) at once.

    | counter          | meaning                                                     |
    |------------------|-------------------------------------------------------------|
    | batches, records | batches written and the records in them                     |
    | payload_bytes    | encoded payload bytes written                               |
    | written_bytes    | container bytes the sink reports                            |
    | batch_elapsed_s  | wall time spent in ``write_batch``                          |
    | flush_reasons    | closed batches per ``FlushReason``                          |

Record columns (a run of numeric ticks, ``add_columns``) are accounted with
``Batcher.add_run`` (the same batches as one ``add`` per record, B7) and split at batch
boundaries as views, so a batch holds per-record ``OutRecord`` values and column parts
in global order.  Counters change only at batch boundaries (no per-record timer).
A write that fails raises: the sink's own ``RecordError``, or ``OutputError`` naming the batch.
"""

from __future__ import annotations

import time
from typing import cast

import numpy as np

from fastsim_record.core.batching import Batcher, BatchLimits, BatchSummary, FlushReason
from fastsim_record.errors import OutputError, RecordError
from fastsim_record.ports.sinks import ColumnSink, OutRecord, RecordColumns, RecordSink

__all__ = ["BatchWriter"]


class BatchWriter:
    """Accounts records in the ``Batcher`` and writes every batch it closes."""

    def __init__(self, sink: RecordSink, limits: BatchLimits) -> None:
        self.sink = sink
        self._batcher = Batcher(limits)
        self._pending: list[OutRecord | RecordColumns] = []
        self.batches = 0
        self.records = 0
        self.payload_bytes = 0
        self.written_bytes = 0
        self.batch_elapsed_s = 0.0
        self.flush_reasons: dict[str, int] = {}

    def add(self, record: OutRecord | RecordColumns) -> None:
        """Account ``record`` (or a run of records: ``add_columns``); write the batches it closes."""
        if record.__class__ is RecordColumns:
            self.add_columns(record)
            return
        self._pending.append(record)
        for closed in self._batcher.add(record.generation, record.sim_time_ns, len(record.payload)):
            self._write(closed)

    def add_columns(self, columns: RecordColumns) -> None:
        """Account a run of records at once (B7); write the batches it closes."""
        self._pending.append(columns)
        times = columns.sim_time_ns
        size = columns.record_bytes
        closed: tuple[BatchSummary, ...] | list[BatchSummary]
        if columns.times_ordered or len(times) < 2 or not np.count_nonzero(times[1:] < times[:-1]):
            closed = self._batcher.add_run(columns.generation, times, size)
        else:  # times that go down: the writer refuses them; account them one by one
            closed = [c for t in times.tolist() for c in self._batcher.add(columns.generation, t, size)]
        for batch in closed:
            self._write(batch)

    def close_generation(self, generation: int) -> None:
        """B5: a barrier opening ``generation`` closes a batch held in another generation."""
        held = self._batcher.hold()
        if held.items and held.generation != generation:
            self.close(FlushReason.GENERATION)

    def close(self, reason: FlushReason) -> None:
        """Close and write the partial batch, if any (B5, B6)."""
        closed = self._batcher.close(reason)
        if closed is not None:
            self._write(closed)

    def _take(self, count: int) -> list[OutRecord | RecordColumns]:
        """The oldest ``count`` pending records (a column run is split as views)."""
        pending = self._pending
        batch: list[OutRecord | RecordColumns] = []
        k = 0
        while count > 0 and k < len(pending):
            entry = pending[k]
            if entry.__class__ is OutRecord:
                count -= 1
                k += 1
                batch.append(entry)
                continue
            columns: RecordColumns = entry  # type: ignore[assignment]
            size = columns.count
            if size <= count:
                count -= size
                k += 1
                batch.append(columns)
            else:
                batch.append(columns.part(0, count))
                pending[k] = columns.part(count, size)
                count = 0
        del pending[:k]
        return batch

    def _write(self, closed: BatchSummary) -> None:
        """Write the batch ``closed`` covers; its records and payload bytes are counted as
        the ``Batcher`` accounted them (each record's payload length), not again here."""
        batch = self._take(closed.items)
        if not batch:
            return
        started = time.perf_counter()
        try:
            self.written_bytes += cast(ColumnSink, self.sink).write_batch(batch)
        except RecordError:
            raise
        except Exception as exc:
            raise OutputError(f"writing batch {self.batches} failed: {exc}") from exc
        self.batch_elapsed_s += time.perf_counter() - started
        self.batches += 1
        self.records += closed.items
        self.payload_bytes += closed.payload_bytes
        reason = closed.reason
        self.flush_reasons[reason.value] = self.flush_reasons.get(reason.value, 0) + 1

    def counters(self) -> dict[str, object]:
        """The module table's counters (a snapshot)."""
        return {
            "payload_bytes": self.payload_bytes, "written_bytes": self.written_bytes,
            "records": self.records, "batches": self.batches,
            "flush_reasons": dict(self.flush_reasons), "batch_elapsed_s": self.batch_elapsed_s,
        }
