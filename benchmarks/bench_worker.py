"""Writer-worker CPU per numeric record (90 channels), against writing the same bytes plainly.

Scene: the synthetic backend, 90 numeric channels at 120 Hz (one 5,040-byte atomic tick
record per tick: 630 float64), published through the embedded host's packed path exactly as a Run
publishes it.  Ticks are published in chunks of 200 (below the lane's pressure mark, so
the worker drains on its own wake-ups); after each chunk the loop waits, untimed, until
the worker has drained.  The figure is the worker thread's own CPU time
(``pthread_getcpuclockid``), divided by the records it wrote, before finalization:
drain, merge, encode, batch accounting, record tables and the file writes.

Baseline, measured in the same process and interleaved round by round: the least any
writer must do with the same ticks -- join each batch's tick buffers into one buffer
(``numpy.concatenate``) and ``os.write`` it to a file -- timed with ``time.thread_time``.

``--copying-backend``: the backend hands out a writable packed buffer each tick, so
Core copies every tick (into its tick arena, ``fastsim_contract.arena``: the worker then
writes each run of ticks from one existing memory range).  By default the synthetic
backend hands out a new read-only buffer, published uncopied.

Target (issue 26): <= 3 us of worker CPU per numeric record.

    python benchmarks/bench_worker.py [--ticks 24000] [--rounds 5] [--copying-backend] [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

import numpy as np
from _record_host import RecordRun, lane_losses
from _report import Figures, add_json_flag, load_average

from fastsim_embedded.session.loop import observation_publisher

TARGET_US = 3.0
CHUNK = 200


def _worker_cpu(plugin: Any) -> float:
    return time.clock_gettime(time.pthread_getcpuclockid(plugin.worker.thread.ident))


def _settle(plugin: Any) -> None:
    """Wait until every lane is empty and the worker's CPU clock has stopped moving."""
    lanes = plugin.lanes
    while any(handle.lane.depth for handle in lanes.values()):
        for handle in lanes.values():
            handle.wake.set()
        time.sleep(0.002)
    before = -1.0
    while True:
        now = _worker_cpu(plugin)
        if now == before:
            return
        before = now
        time.sleep(0.02)


def worker_round(ticks: int, channels: int, copying: bool = False) -> dict[str, Any]:
    """One Run's worker CPU per record (and the tick buffers, for the baseline)."""
    run = RecordRun.build(record=True, channels=channels)
    host, backend = run.host, run.prepared.backend
    if copying:  # a writable buffer each tick: Core copies it
        frozen: Any = backend.sample_numeric_packed  # type: ignore[attr-defined]  # the synthetic backend's
        backend = _Copying(backend, lambda: np.array(frozen()))
    record: Any = run.plugin  # the Record plugin
    plugin: Any = record.wiring  # what it was wired with: its encoders and worker
    record_bytes = int(plugin.encoders["observations"].record_bytes)
    backend.step(1)
    observe = observation_publisher(host.observations, backend)
    assert observe is not None
    dt = 1e9 / host.context.sensor_hz
    _settle(plugin)
    cpu0 = _worker_cpu(plugin)
    records0 = plugin.worker._records.encoded
    for start in range(1, ticks + 1, CHUNK):
        for tick in range(start, min(ticks, start + CHUNK - 1) + 1):
            host.advance(tick, round(tick * dt))
            observe()
        _settle(plugin)
    cpu = _worker_cpu(plugin) - cpu0
    records = plugin.worker._records.encoded - records0
    runs = getattr(getattr(plugin.worker, "_runs", None), "runs", 0)  # absent before the columnar path
    outcome, summary = run.finish()
    if outcome.status != "succeeded":
        raise SystemExit(f"bench_worker: the Run did not succeed: {outcome.reason}")
    return {"us_per_record": 1e6 * cpu / max(records, 1), "records": records, "runs": runs,
            "lost": lane_losses(summary), "record_bytes": record_bytes}


class _Copying:
    """``backend`` whose ``sample_numeric_packed`` answers a writable copy."""

    def __init__(self, backend: Any, packed: Any) -> None:
        self._backend = backend
        self.sample_numeric_packed = packed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


def baseline_round(ticks: int, record_bytes: int, per_batch: int) -> float:
    """CPU us per record of concatenating and writing the same bytes in the same batches."""
    rng = np.random.default_rng(0)
    buffers = [rng.random(record_bytes // 8) for _ in range(min(ticks, 512))]
    with tempfile.TemporaryDirectory(prefix="fsr-bench-worker-") as tmp:
        fd = os.open(os.path.join(tmp, "plain.bin"), os.O_WRONLY | os.O_CREAT)
        try:
            t0 = time.thread_time()
            for start in range(0, ticks, per_batch):
                chunk = [buffers[k % len(buffers)] for k in range(start, min(ticks, start + per_batch))]
                os.write(fd, np.concatenate(chunk).data)
            cpu = time.thread_time() - t0
        finally:
            os.close(fd)
    return 1e6 * cpu / ticks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=24000)
    parser.add_argument("--channels", type=int, default=90)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--copying-backend", action="store_true", help="a writable packed buffer each tick")
    add_json_flag(parser)
    args = parser.parse_args()
    load = load_average()
    worker: list[dict[str, Any]] = []
    plain: list[float] = []
    record_bytes = 0
    for round_ in range(args.rounds):
        order = ("worker", "plain") if round_ % 2 == 0 or not worker else ("plain", "worker")
        for name in order:
            if name == "worker":
                worker.append(worker_round(args.ticks, args.channels, args.copying_backend))
                record_bytes = worker[-1]["record_bytes"]
            else:  # the first round measures the worker first: record_bytes is known here
                plain.append(baseline_round(args.ticks, record_bytes or worker[-1]["record_bytes"], 120))
        print(f"  round {round_ + 1}: worker {worker[-1]['us_per_record']:.2f} us/record "
              f"({worker[-1]['runs']} column runs), plain copy+write {plain[-1]:.2f} us/record", flush=True)
    us = statistics.median(r["us_per_record"] for r in worker)
    base = statistics.median(plain)
    lost = sum(int(r["lost"]) for r in worker)
    print(f"\nwriter worker{' (copying backend)' if args.copying_backend else ''}, {args.channels} numeric channels ({record_bytes} bytes per tick) at 120 Hz, {args.ticks} ticks, "
          f"{args.rounds} interleaved rounds (load average {load})")
    print(f"  worker CPU per numeric record : {us:8.2f} us   (target <= {TARGET_US:g} us)")
    print(f"  plain concatenate + write     : {base:8.2f} us   (same bytes, same batches)")
    print(f"  ratio worker / plain          : {us / base:8.1f}x")
    print(f"  lost records                  : {lost}")
    figures = Figures("bench_worker")
    figures.add("worker_us_per_record", us, TARGET_US, "<=")
    figures.add("plain_write_us_per_record", base)
    figures.add("worker_over_plain_ratio", us / base if base else float("nan"))
    figures.add("lost_records", lost, 0, "<=")
    print("\nPASS" if figures.passed else "\nFAIL")
    figures.emit(args.json)
    return 0 if figures.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
