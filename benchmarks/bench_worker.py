"""Writer-worker CPU per numeric record (90 channels), against writing the same bytes plainly.

Scene: the synthetic backend, 90 numeric channels at 120 Hz (one 5,040-byte atomic tick
record per tick: 630 float64), published through the embedded host's packed path, on two paths:

  * ``block`` -- exactly as a scripted Run publishes it (``fsr record``, sweeps): the host
    stamps observation blocks of up to ``SCRIPTED_MAX_BLOCK`` (240) ticks, which Record
    takes with its default ``fail_run`` numeric lane (README, "Blocks of ticks").  This is
    the figure the target applies to.
  * ``tick`` -- one envelope per tick, the path a lossy numeric lane (``drop_newest``,
    ``drop_oldest``, ``degrade_recording``) and the Gymnasium recorders take.

Ticks are published in chunks of 200 (below the lane's pressure mark, so
the worker drains on its own wake-ups); after each chunk the loop waits, untimed, until
the worker has drained.  The figure is the worker thread's own CPU time
(``pthread_getcpuclockid``), divided by the records it wrote, before finalization:
drain, merge, encode, batch accounting, record tables and the file writes.

Baseline, measured in the same process and interleaved round by round: the least any
writer must do with the same ticks -- join each batch's tick buffers into one buffer
(``numpy.concatenate``) and ``os.write`` it to a file -- timed with ``time.thread_time``.

Target (issue 26): <= 3 us of worker CPU per numeric record (the ``block`` path; the
``tick`` path is reported beside it, against the same figure).

    python benchmarks/bench_worker.py [--ticks 24000] [--rounds 5] [--paths block,tick] [--json]
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

from fastsim_embedded.session.loop import SCRIPTED_MAX_BLOCK, observation_publisher

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


def worker_round(ticks: int, channels: int, path: str = "block") -> dict[str, Any]:
    """One Run's worker CPU per record on ``path`` (``block`` or ``tick``)."""
    run = RecordRun.build(record=True, channels=channels)
    host, backend = run.host, run.prepared.backend
    record: Any = run.plugin  # the Record plugin
    plugin: Any = record.wiring  # what it was wired with: its encoders and worker
    record_bytes = int(plugin.encoders["observations"].record_bytes)
    backend.step(1)
    observe = observation_publisher(host.observations, backend, SCRIPTED_MAX_BLOCK if path == "block" else 1)
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
    parser.add_argument("--paths", default="block,tick", help="comma-separated: block (a scripted Run), tick")
    add_json_flag(parser)
    args = parser.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    if not paths or any(p not in ("block", "tick") for p in paths):
        parser.error(f"--paths: expected block and/or tick, got {args.paths!r}")
    load = load_average()
    worker: dict[str, list[dict[str, Any]]] = {p: [] for p in paths}
    plain: list[float] = []
    record_bytes = 0
    for round_ in range(args.rounds):
        order = [*paths, "plain"] if round_ % 2 == 0 or not record_bytes else ["plain", *reversed(paths)]
        for name in order:
            if name == "plain":  # the first round measures a worker first: record_bytes is known here
                plain.append(baseline_round(args.ticks, record_bytes, 120))
            else:
                worker[name].append(worker_round(args.ticks, args.channels, name))
                record_bytes = worker[name][-1]["record_bytes"]
        said = ", ".join(f"{p} {worker[p][-1]['us_per_record']:.2f} us ({worker[p][-1]['runs']} column runs)" for p in paths)
        print(f"  round {round_ + 1}: worker {said}; plain copy+write {plain[-1]:.2f} us/record", flush=True)
    us = {p: statistics.median(r["us_per_record"] for r in worker[p]) for p in paths}
    base = statistics.median(plain)
    lost = sum(int(r["lost"]) for rounds in worker.values() for r in rounds)
    print(f"\nwriter worker, {args.channels} numeric channels ({record_bytes} bytes per tick) at 120 Hz, {args.ticks} ticks, "
          f"{args.rounds} interleaved rounds (load average {load})")
    for p in paths:
        label = "a scripted Run's blocks" if p == "block" else "one envelope per tick"
        print(f"  worker CPU per numeric record, {label:<24}: {us[p]:8.2f} us   (target <= {TARGET_US:g} us; "
              f"{us[p] / base:.1f}x plain)")
    print(f"  plain concatenate + write (same bytes, same batches)          : {base:8.2f} us")
    print(f"  lost records                                                  : {lost}")
    figures = Figures("bench_worker")
    if "block" in us:
        figures.add("worker_us_per_record", us["block"], TARGET_US, "<=")
        figures.add("worker_over_plain_ratio", us["block"] / base if base else float("nan"))
    if "tick" in us:
        figures.add("worker_us_per_record_per_tick_path", us["tick"], TARGET_US, "<=")
        figures.add("worker_over_plain_ratio_per_tick_path", us["tick"] / base if base else float("nan"))
    figures.add("plain_write_us_per_record", base)
    figures.add("lost_records", lost, 0, "<=")
    print("\nPASS" if figures.passed else "\nFAIL")
    figures.emit(args.json)
    return 0 if figures.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
