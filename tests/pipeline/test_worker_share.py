"""The writer worker's GIL hand-off follows lane pressure (worker rule 6)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import pytest

from fastsim_record.core.batching import BatchLimits
from fastsim_record.core.captured import CapturedItem, LaneName
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import PressureGauge
from fastsim_record.pipeline.worker import WriterWorker
from fastsim_record.ports.sinks import OutRecord


class SlowEncoder:
    """Holds the GIL for ~0.2 ms per payload, like pure-Python encoding work."""

    codec: Mapping[str, object] = MappingProxyType({"payload_codec": "test"})

    def encode(self, payload: object) -> bytes:
        end = time.perf_counter() + 0.0002
        while time.perf_counter() < end:
            pass
        return b"x"


class NullSink:
    def write_batch(self, records: Sequence[OutRecord]) -> int:
        return len(records)

    def finish(self, *, degraded: bool, fence: object) -> dict[str, object]:
        return {}

    def abort(self) -> None:
        return None


def _yields(monkeypatch: pytest.MonkeyPatch, *, pressed: bool, items: int) -> int:
    gauge = PressureGauge()
    if pressed:
        gauge.press()
    worker = WriterWorker(
        lanes={}, wake=threading.Event(), encoders={"s": SlowEncoder()},
        barrier_encoder=lambda _payload: b"", sink=NullSink(),
        limits=BatchLimits(max_items=1 << 20, max_bytes=1 << 30, max_sim_span_ns=1 << 62),
        monitor=Monitor(lambda _reason: False), gauge=gauge,
    )
    calls: list[float] = []
    monkeypatch.setattr(time, "sleep", calls.append)  # the worker calls time.sleep(0)
    released = [
        CapturedItem(global_sequence=i, source="s", capture_sequence=i, stream="s", lane=LaneName.NUMERIC,
                 payload=i)
        for i in range(1, items + 1)
    ]
    worker._write_released(list(released))
    monkeypatch.undo()
    return len(calls)


def test_a_worker_that_keeps_up_offers_the_gil_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unpressed: 40 items of 0.2 ms each span several 0.5-ms slices: it yields."""
    assert _yields(monkeypatch, pressed=False, items=40) >= 3


def test_a_pressed_worker_never_offers_the_gil_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pressed (a lane at 1/8): the same work, and a longer one, never yields voluntarily."""
    assert _yields(monkeypatch, pressed=True, items=40) == 0
    assert _yields(monkeypatch, pressed=True, items=200) == 0
