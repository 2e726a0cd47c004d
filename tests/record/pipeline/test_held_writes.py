"""Held batch writes (``fsr_sink.LeaseWriter``) and the worker's release after relieving
the pressure gauge (worker rule 9)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from fastsim_record.adapters.fsr_sink import LeaseWriter
from fastsim_record.core.batching import BatchLimits
from fastsim_record.errors import OutputError
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import PressureGauge
from fastsim_record.pipeline.worker import WriterWorker
from fastsim_record.ports.sinks import OutRecord


class VectoredLease:
    """A write lease with ``writev`` that logs each call's bytes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bytes]] = []
        self.flushed = 0

    def write(self, data: Any) -> int:
        self.calls.append(("write", bytes(data)))
        return len(bytes(data))

    def writev(self, parts: Sequence[Any], nbytes: int) -> int:
        data = b"".join(bytes(p) for p in parts)
        assert len(data) == nbytes
        self.calls.append(("writev", data))
        return nbytes

    def flush(self) -> None:
        self.flushed += 1


def test_held_batches_reach_the_lease_in_one_vectored_call_in_order() -> None:
    """Two batches' parts are held (reported written), then released in ONE call, in order."""
    lease = VectoredLease()
    target = LeaseWriter(lease, hold_bytes=1 << 20)  # type: ignore[arg-type]
    assert target.writev([b"ab", b"cd"], 4) == 4
    assert target.writev([memoryview(b"efg")], 3) == 3
    assert lease.calls == []
    assert target.release() == 7
    assert lease.calls == [("writev", b"abcdefg")]
    assert target.release() == 0  # nothing held: no call
    assert len(lease.calls) == 1


def test_write_and_flush_write_the_held_parts_first() -> None:
    """A plain write (the file tail) and a flush never overtake held bytes."""
    lease = VectoredLease()
    target = LeaseWriter(lease, hold_bytes=1 << 20)  # type: ignore[arg-type]
    target.writev([b"batch"], 5)
    target.write(b"tail")
    assert lease.calls == [("writev", b"batch"), ("write", b"tail")]
    target.writev([b"more"], 4)
    target.flush()
    assert lease.calls[-1] == ("writev", b"more")
    assert lease.flushed == 1


def test_holding_is_bounded() -> None:
    """Past ``hold_bytes`` the held parts go out first, then the new ones directly: memory stays bounded."""
    lease = VectoredLease()
    target = LeaseWriter(lease, hold_bytes=8)  # type: ignore[arg-type]
    target.writev([b"12345"], 5)
    target.writev([b"678"], 3)  # 8: still held
    assert lease.calls == []
    target.writev([b"9abc"], 4)  # 12 > 8: the held ones, then this one
    assert lease.calls == [("writev", b"12345678"), ("writev", b"9abc")]
    unheld = LeaseWriter(VectoredLease())  # type: ignore[arg-type]  # hold_bytes 0: every call written at once
    unheld.writev([b"x"], 1)
    assert unheld._lease.calls == [("writev", b"x")]  # type: ignore[attr-defined]


class LoggingGauge(PressureGauge):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def relieve(self) -> None:
        self.log.append("relieve")
        super().relieve()


class HoldingSink:
    """A sink that holds what it is given until ``release_writes`` (a ``HeldWrites`` sink)."""

    def __init__(self, log: list[str], fail: bool = False) -> None:
        self.log, self.fail = log, fail

    def write_batch(self, records: Sequence[OutRecord]) -> int:
        return len(records)

    def release_writes(self) -> int:
        self.log.append("release")
        if self.fail:
            raise OutputError("write: injected failure of a held write")
        return 0

    def finish(self, *, degraded: bool, fence: object) -> dict[str, object]:
        return {}

    def abort(self) -> None:
        return None


def _one_step(sink: HoldingSink, log: list[str]) -> WriterWorker:
    wake = threading.Event()
    worker = WriterWorker(
        lanes={}, wake=wake, encoders={}, barrier_encoder=lambda _payload: b"", sink=sink,
        limits=BatchLimits(max_items=16, max_bytes=1 << 20, max_sim_span_ns=1 << 62),
        monitor=Monitor(lambda _reason: False), gauge=LoggingGauge(log), poll_s=60.0,
    )
    worker.start()
    wake.set()  # one step
    deadline = threading.Event()
    for _ in range(200):
        if "release" in log:
            break
        deadline.wait(0.01)
    worker.stop()
    assert worker.join(5.0)
    return worker


def test_the_worker_relieves_the_gauge_before_it_writes_what_the_sink_held() -> None:
    """Rule 9: a step ends with relieve, then release_writes (the host runs during the write)."""
    log: list[str] = []
    worker = _one_step(HoldingSink(log), log)
    assert log[:2] == ["relieve", "release"]
    assert worker.error is None


def test_a_failed_release_fails_the_recording() -> None:
    """A held write that fails is the worker's fatal error, never a silent loss."""
    log: list[str] = []
    worker = _one_step(HoldingSink(log, fail=True), log)
    assert isinstance(worker.error, OutputError)
    assert "injected failure of a held write" in str(worker.error)
