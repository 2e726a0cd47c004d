"""Writer-worker CPU per numeric record (90 channels), against writing the same bytes plainly.

Scene: the synthetic backend, 90 numeric channels at 120 Hz (one 5,040-byte atomic tick
record per tick: 630 float64), published through the embedded host's packed path, on two paths:

  * ``block`` -- exactly as a scripted Run publishes it (``fsr record``, sweeps): the host
    stamps observation blocks of up to ``SCRIPTED_MAX_BLOCK`` (240) ticks, which Record
    takes with its default ``fail_run`` numeric lane (README, "Blocks of ticks").  This is
    the figure the target applies to.
  * ``tick`` -- one envelope per tick, the path a lossy numeric lane (``drop_newest``,
    ``drop_oldest``, ``degrade_recording``) and the Gymnasium recorders take.

The worker is driven as an unpaced Run drives it: the loop publishes every tick and,
at the end of each, runs the embedded host's own flow control (``FlowControl.settle``,
FC2-FC7), so the lane's pressure mark (half of the default 2,048-item lossless numeric
lane) wakes the worker, which drains everything at once while the loop waits.  The
simulation loop thus never competes with the worker for the GIL.  The figure is the
worker thread's own CPU time (``pthread_getcpuclockid``), divided by the records it
wrote, before finalization: drain, merge, encode, batch accounting, record tables and
the file writes.

``--paths block1`` adds the cadence this script used until stop 41, for comparison: ticks
in chunks of 200 with a forced drain after each, so the worker wakes for about every
240-tick block.  Each wake-up costs ~0.4 ms of cold-started work whatever it drains
(measured: 3.6 us a record at one block a wake, 2.5 us at four), and no Run wakes the
worker that often: an unpaced one at its lane's mark, a paced one on its 1-s poll.

Baseline, measured in the same process and interleaved round by round: the least any
writer must do with the same ticks -- join each batch's tick buffers into one buffer
(``numpy.concatenate``) and ``os.write`` it to a file -- timed with ``time.thread_time``.

Target (issue 26): <= 3 us of worker CPU per numeric record (the ``block`` path; the
``tick`` path is reported beside it, against the same figure).

    python benchmarks/bench_worker.py [--ticks 24000] [--rounds 5] [--paths block,tick[,block1]] [--json]
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
    """One Run's worker CPU per record on ``path`` (``block``, ``tick`` or ``block1``)."""
    run = RecordRun.build(record=True, channels=channels)
    host, backend = run.host, run.prepared.backend
    record: Any = run.plugin  # the Record plugin
    plugin: Any = record.wiring  # what it was wired with: its encoders and worker
    record_bytes = int(plugin.encoders["observations"].record_bytes)
    backend.step(1)
    observe = observation_publisher(host.observations, backend, 1 if path == "tick" else SCRIPTED_MAX_BLOCK)
    assert observe is not None
    dt = 1e9 / host.context.sensor_hz
    _settle(plugin)
    cpu0 = _worker_cpu(plugin)
    records0 = plugin.worker._records.encoded
    if path == "block1":  # until stop 41: a forced drain every CHUNK ticks
        for start in range(1, ticks + 1, CHUNK):
            for tick in range(start, min(ticks, start + CHUNK - 1) + 1):
                host.advance(tick, round(tick * dt))
                observe()
            _settle(plugin)
    else:  # as an unpaced Run: the host's flow control after every tick
        settle = host.flow.settle
        never = bool
        for tick in range(1, ticks + 1):
            host.advance(tick, round(tick * dt))
            observe()
            settle(never)
        host.bus.flush()
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
    parser.add_argument("--paths", default="block,tick",
                        help="comma-separated: block (a scripted Run), tick, block1 (block, a drain every 200 ticks)")
    add_json_flag(parser)
    args = parser.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    if not paths or any(p not in ("block", "tick", "block1") for p in paths):
        parser.error(f"--paths: expected block, tick and/or block1, got {args.paths!r}")
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
        label = {"block": "a scripted Run's blocks", "tick": "one envelope per tick",
                 "block1": "blocks, a drain per 200 ticks"}[p]
        target = "no target" if p == "block1" else f"target <= {TARGET_US:g} us"
        print(f"  worker CPU per numeric record, {label:<30}: {us[p]:8.2f} us   ({target}; {us[p] / base:.1f}x plain)")
    print(f"  plain concatenate + write (same bytes, same batches)                : {base:8.2f} us")
    print(f"  lost records                                                        : {lost}")
    figures = Figures("bench_worker")
    if "block" in us:
        figures.add("worker_us_per_record", us["block"], TARGET_US, "<=")
        figures.add("worker_over_plain_ratio", us["block"] / base if base else float("nan"))
    if "block1" in us:  # no target: no Run drains this often
        figures.add("worker_us_per_record_drain_per_200_ticks", us["block1"])
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
