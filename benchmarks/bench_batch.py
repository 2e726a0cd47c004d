"""Batch jobs over 1,000 recorded episodes: validate and index throughput, pool and Ray.

Data: ONE short episode is recorded with the embedded host (the synthetic backend,
``examples/minimal``-like Run, 2 s at 60 Hz: lifecycle, events, control and one numeric
observation record per tick), then copied 1,000 times into a cache folder (``--data``,
default ``/tmp/fsr-bench-batch``; made once, re-used).  Copies are byte-identical, so
per-file work is identical too: the figures are per-file costs, not content effects.

Measured, with the real job functions (``fastsim_record.batch.jobs``) and executors:

* validate (``validate_job``: structural) and index (``index_job``: validate + summary)
  throughput in files/s with the process pool at ``--jobs 1`` (in-process) and
  ``--jobs 2`` (two ``forkserver`` workers; their start-up is timed separately), and the
  scaling ratio jobs 2 / jobs 1 (target >= 1.7 on 2 cores);
* the same with Ray tasks on a local Ray (``address="local"``, 2 CPUs) on the same
  files; Ray's start-up (``ray.init``) is timed separately and not in the files/s;
* a control: a pure-CPU job of about the same size (no I/O) in the same rounds, whose
  jobs 2 / jobs 1 ratio shows how much of a second core the machine gave at that time;
* peak RSS per worker (psutil, sampled every 20 ms over the workers' processes);
* one DROID-like MuJoCo episode (``examples/sweep/run.yaml``, 4 s, 2 cameras) recorded
  with ``fsr record`` as a subprocess: wall, CPU seconds, peak RSS and bytes; then the
  per-file validate / index / SHA-256 cost of that realistic file (``--no-record`` skips);
* the index's size per row over ``--index-rows`` distinct short episodes (own run ids
  and digests, so Parquet cannot fold repeated values), for the scale-out plan.

Each configuration runs ``--repeat`` times, interleaved (pool 1, pool 2, ray, pool 1,
...), and the median is printed with the load average seen at its start: the machine
is shared, so a busy neighbour shows up as a lower jobs-2 figure.

    python benchmarks/bench_batch.py [--files 1000] [--repeat 3] [--no-ray] [--no-record]
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import yaml
from _report import Figures, add_json_flag

from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.batch.executors import ProcessPool, RayTasks
from fastsim_record.batch.index import write_index
from fastsim_record.batch.jobs import CheckTask, Outcome, index_job, sha256_file, validate_job
from fastsim_record.batch.sources import expand

ROOT = Path(__file__).resolve().parents[1]


def make_data(folder: Path, files: int) -> list[Path]:
    """Record one episode, copy it ``files`` times (once; re-used when present)."""
    folder.mkdir(parents=True, exist_ok=True)
    have = sorted(folder.glob("ep-*.fsr"))
    if len(have) >= files:
        return have[:files]
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run.yaml"
        run.write_text(yaml.safe_dump({
            "schema": "fastsim/2", "name": "bench-batch", "backend": "synthetic",
            "scenario": {"scene": {}}, "runtime": {"sensor_hz": 60.0, "duration_s": 2.0},
            "plugins": {"record": {"use": "plugin://fastsim/record", "config": {"output": {"name": "one.fsr"}}}},
        }))
        result = run_session(prepare_run(run, seed=1), Path(tmp) / "out")
        assert result.outcome.ok, result.outcome.reason
        source = Path(result.outcome.committed[0])
        for k in range(files):
            shutil.copy2(source, folder / f"ep-{k:05d}.fsr")
    return sorted(folder.glob("ep-*.fsr"))[:files]


class PeakRss:
    """Peak RSS per worker process, sampled every 20 ms in a thread; ``pids()`` names
    the workers (the pool's processes, or Ray's ``ray::`` workers)."""

    def __init__(self, pids: Any) -> None:
        self.pids, self.peaks, self._stop = pids, dict[int, int](), threading.Event()
        self.cpu: dict[int, float] = {}
        self.first_cpu: dict[int, float] = {}
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in self.pids():
                try:
                    proc = psutil.Process(pid)
                    rss = proc.memory_info().rss
                    times = proc.cpu_times()
                except psutil.Error:
                    continue
                self.peaks[pid] = max(self.peaks.get(pid, 0), rss)
                self.first_cpu.setdefault(pid, times.user + times.system)
                self.cpu[pid] = times.user + times.system
            self._stop.wait(0.02)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def cpu_s(self) -> float:
        """CPU seconds the workers used while sampled."""
        return sum(self.cpu[p] - self.first_cpu[p] for p in self.cpu)

    def mib(self) -> float:
        """The largest worker peak, MiB."""
        return max(self.peaks.values(), default=0) / 2**20


def _pool_pids(executor: ProcessPool) -> Any:
    def pids() -> list[int]:
        pool = executor._pool
        return list(pool._processes) if pool is not None else [os.getpid()]
    return pids


def _ray_pids() -> list[int]:
    out = []
    for proc in psutil.process_iter(["name", "pid"]):
        if str(proc.info["name"]).startswith("ray::"):
            out.append(int(proc.info["pid"]))
    return out


def timed(executor: Any, fn: Any, tasks: list[CheckTask], pids: Any) -> tuple[float, float, float, float]:
    """(files/s, worker peak MiB, load average at start, files per worker CPU second);
    every outcome must be ok."""
    load = os.getloadavg()[0]
    with PeakRss(pids) as rss:
        start = time.perf_counter()
        outcomes = list(executor.map(fn, tasks))
        elapsed = time.perf_counter() - start
    bad = [o for o in outcomes if o.code]
    assert not bad, bad[:3]
    return len(tasks) / elapsed, rss.mib(), load, len(tasks) / max(rss.cpu_s(), 1e-9)


def cpu_control(task: CheckTask) -> Outcome:
    """The control job: about 1.5 ms of pure-Python CPU work per item, no I/O. Its
    jobs-2 / jobs-1 ratio is what the machine gives two processes at that moment."""
    total = 0
    for k in range(40_000):
        total += k * k % 7
    return Outcome(task.entry.url, 0 if total >= 0 else 1)


def _per_file_ms(fn: Any, task: CheckTask, times: int) -> float:
    """Median milliseconds of one job on one file, in this process."""
    runs = []
    for _ in range(times):
        t = time.perf_counter()
        outcome = fn(task)
        runs.append(time.perf_counter() - t)
        assert outcome.code == 0, outcome.error
    return statistics.median(runs) * 1e3


def record_sample() -> list[str]:
    """One DROID-like MuJoCo episode recorded by ``fsr record``: wall, CPU, peak RSS,
    bytes; then validate, index and SHA-256 of that file, per file, in this process."""
    fsr = str(Path(sys.executable).with_name("fsr"))
    with tempfile.TemporaryDirectory() as tmp:
        before = os.times()
        load = os.getloadavg()[0]
        start = time.perf_counter()
        done = subprocess.run([fsr, "record", str(ROOT / "examples/sweep/run.yaml"), "--output-dir", tmp,
                               "--no-progress"], capture_output=True, text=True, check=False,
                              env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")})
        wall = time.perf_counter() - start
        after = os.times()
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        if done.returncode:
            return [f"record sample failed (exit {done.returncode}): {done.stderr.strip()[-200:]}"]
        path = next(Path(tmp).glob("*.fsr"))
        size = path.stat().st_size
        task = CheckTask(expand([str(path)])[0], sha256=True)
        validate_ms = _per_file_ms(validate_job, CheckTask(task.entry), 20)
        index_ms = _per_file_ms(index_job, task, 20)
        t = time.perf_counter()
        for _ in range(10):
            sha256_file(str(path))
        sha_mb_s = 10 * size / (time.perf_counter() - t) / 1e6
    return [
        f"record examples/sweep (4.0 s simulated, MuJoCo, 2 cameras 320x240 @15 Hz), one `fsr record` process: "
        f"wall {wall:.2f} s, CPU {cpu:.2f} s, peak RSS {rss:.0f} MiB, {size} bytes ({size / 2**20:.2f} MiB); "
        f"load {load:.2f}",
        f"that episode, in this process (median of 20): validate (structural) {validate_ms:.2f} ms, "
        f"index row with --sha256 {index_ms:.2f} ms; SHA-256 {sha_mb_s:.0f} MB/s; load {os.getloadavg()[0]:.2f}",
    ]


def index_size(rows: int) -> str:
    """Bytes per row of an index over ``rows`` distinct recorded episodes (own run ids,
    seeds and digests), written by ``fsr index --sha256``."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run.yaml"
        run.write_text(yaml.safe_dump({
            "schema": "fastsim/2", "name": "bench-batch", "backend": "synthetic",
            "scenario": {"scene": {}}, "runtime": {"sensor_hz": 30.0, "duration_s": 0.1},
            "plugins": {"record": {"use": "plugin://fastsim/record",
                                   "config": {"output": {"name": "ep-{seed}.fsr"}}}},
        }))
        for seed in range(rows):
            result = run_session(prepare_run(run, seed=seed, episode=seed, sweep=True), Path(tmp) / "eps")
            assert result.outcome.ok, result.outcome.reason
        out = Path(tmp) / "index.parquet"
        outcomes = [index_job(CheckTask(e, sha256=True)) for e in expand([str(Path(tmp) / "eps")])]
        assert all(o.code == 0 and o.data is not None for o in outcomes)
        write_index(str(out), [o.data for o in outcomes if o.data is not None])
        size = out.stat().st_size
    return f"index of {rows} distinct episodes (--sha256): {size} bytes, {size / rows:.0f} bytes per row"


def main() -> None:
    """Run the measurements and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", default="/tmp/fsr-bench-batch")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--no-throughput", action="store_true", help="skip the pool/Ray throughput runs")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--index-rows", type=int, default=500, help="distinct episodes for the index size (0: skip)")
    add_json_flag(parser)
    args = parser.parse_args()
    figures = Figures("bench_batch")

    if args.no_throughput:
        args.files, args.repeat, args.no_ray = 0, 0, True
    t0 = time.perf_counter()
    paths = make_data(Path(args.data), args.files)
    entries = expand([str(p) for p in paths])
    size = entries[0].size if entries else 0
    print(f"{len(entries)} copies of one recorded episode ({size} bytes each), made/checked in "
          f"{time.perf_counter() - t0:.1f} s; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
    tasks = [CheckTask(e) for e in entries]
    ray_exec: RayTasks | None = None
    if not args.no_ray:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        import ray

        load = os.getloadavg()[0]
        start = time.perf_counter()
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.ERROR,
                 log_to_driver=False)
        ray_exec = RayTasks()
        ray_exec.start()
        init = time.perf_counter() - start
        list(ray_exec.map(validate_job, tasks[:4]))  # workers import the jobs' modules
        print(f"ray start-up: ray.init (address=local, 2 CPUs) {init:.2f} s, first tasks (workers import "
              f"the jobs) {time.perf_counter() - start - init:.2f} s; load {load:.2f}")
    results: dict[str, list[tuple[float, float, float, float]]] = {}
    startups: dict[str, list[float]] = {}
    jobs: dict[str, Any] = {"control": cpu_control, "validate": validate_job, "index": index_job}
    for _ in range(args.repeat):
        for op, fn in jobs.items():
            for label in ("pool 1", "pool 2", "ray"):
                if label == "ray":
                    if ray_exec is None:
                        continue
                    executor: Any = ray_exec
                    match: Any = _ray_pids
                else:
                    executor = ProcessPool(jobs=int(label[-1]))
                    match = _pool_pids(executor)
                    start = time.perf_counter()
                    executor.start()
                    startups.setdefault(label, []).append(time.perf_counter() - start)
                try:
                    results.setdefault(f"{op} {label}", []).append(timed(executor, fn, tasks, match))
                finally:
                    if label != "ray":
                        executor.close()
    if results:
        print(f"\n{'configuration':<18} {'files/s (median)':>17} {'runs':>22} {'files/CPU-s':>12} "
              f"{'worker peak MiB':>16} {'load':>6}")
    med: dict[str, float] = {}
    for key, runs in results.items():
        rates = [r[0] for r in runs]
        med[key] = statistics.median(rates)
        k = rates.index(sorted(rates)[len(rates) // 2])
        print(f"{key:<18} {med[key]:>17.0f} {', '.join(f'{r:.0f}' for r in rates):>22} "
              f"{statistics.median(r[3] for r in runs):>12.0f} {max(r[1] for r in runs):>16.0f} {runs[k][2]:>6.2f}")
    for label, times in startups.items():
        print(f"{label} start-up (workers ready, not in files/s): median {statistics.median(times) * 1e3:.0f} ms")
    print()
    for op in jobs if results else ():
        target = "what the machine gave two processes" if op == "control" else "target >= 1.7x"
        print(f"{op}: jobs 2 / jobs 1 = {med[f'{op} pool 2'] / med[f'{op} pool 1']:.2f}x ({target})")
        figures.add(f"{op}_jobs2_over_jobs1", med[f"{op} pool 2"] / med[f"{op} pool 1"],
                    None if op == "control" else 1.7, None if op == "control" else ">=")
        figures.add(f"{op}_pool1_files_per_s", med[f"{op} pool 1"])
        if f"{op} ray" in med:
            print(f"{op}: ray / pool 2 = {med[f'{op} ray'] / med[f'{op} pool 2']:.2f}x (same files, Ray start-up excluded)")
    if ray_exec is not None:
        import ray

        ray.shutdown()
    if not args.no_record:
        for line in record_sample():
            print(line)
    if args.index_rows:
        print(index_size(args.index_rows))
    figures.emit(args.json)


if __name__ == "__main__":
    main()
