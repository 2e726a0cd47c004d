"""Benchmark of the pure core's two hot paths, as ratios against a bare deque pair.

1. Capture path (simulation thread, every tick): one pump validation
   (``SourceContinuity.check``) plus ``Lane.try_publish`` per envelope.
   Target: at most 20x one bare ``collections.deque`` append + popleft pair.
2. Worker path: drain the lanes, ordered merge and batch accounting (``Batcher.add``)
   per envelope, encoding excluded, with the merge calls ``WriterWorker`` makes: each
   drained chunk in one ``OrderedMerge.push_all``, then ``release_entries``.
   Target: at least 300,000 envelopes/s.  Until stop 45 this path called ``push`` per
   envelope and ``release``, which the worker stopped using when the merge began to hold
   runs as intervals (stop 36's w26): that per-envelope path is still printed beside it,
   as ``single-push``, for comparison with the older figures (about 0.5 us an envelope
   before w26, about 0.9 us since).

Both figures and the baseline are measured in this one process over the same
cache-hot window of envelopes (on the simulation thread an envelope has just been
stamped, so it is hot); best of ``--repeat``.
Run: ``python benchmarks/bench_core.py``.
"""

from __future__ import annotations

import argparse
import collections
import time
from collections.abc import Callable
from typing import cast

from _report import Figures, add_json_flag

from fastsim_record.core import (
    Batcher,
    BatchLimits,
    CapturedItem,
    CapturedRun,
    Lane,
    LaneName,
    LaneSpec,
    OrderedMerge,
    SourceContinuity,
)
from fastsim_record.testing.envelopes import EnvelopeFactory

CAPTURE_TARGET_RATIO = 20.0
WORKER_TARGET_PER_S = 300_000.0


def _best(fn: Callable[[], float], repeat: int) -> float:
    return min(fn() for _ in range(repeat))


def _script(n: int) -> list[CapturedItem]:
    """n envelopes over three sources/lanes, as a 120 Hz tick with one camera would publish."""
    f = EnvelopeFactory()
    out: list[CapturedItem] = []
    while len(out) < n:
        f.next_tick()
        out.append(f.record("numeric.tick", size=720))
        out.append(f.record("cameras.a.rgb", source="cameras", size=921_600 // 1024))
        out.append(f.record("lifecycle", source="lifecycle", size=128))
    return out[:n]


def bench_deque(envs: list[CapturedItem], rounds: int) -> float:
    """Seconds per bare deque append + popleft pair."""
    total = 0.0
    for _ in range(rounds):
        d: collections.deque[CapturedItem] = collections.deque()
        append, popleft = d.append, d.popleft
        t0 = time.perf_counter()
        for e in envs:
            append(e)
            popleft()
        total += time.perf_counter() - t0
    return total / (rounds * len(envs))


def bench_capture(envs: list[CapturedItem], rounds: int) -> float:
    """Seconds per pump validation + try_publish (one source into its lane: a pump's view)."""
    obs = [e for e in envs if e.source == "observations"]
    total = 0.0
    for _ in range(rounds):
        lane = Lane(LaneSpec(name=LaneName.NUMERIC, max_items=len(obs) + 1, max_bytes=1 << 60))
        check = SourceContinuity("observations", carries_barriers=True).check
        publish = lane.try_publish
        t0 = time.perf_counter()
        for e in obs:
            if check(e) is None:
                publish(e)
        total += time.perf_counter() - t0
        assert lane.counters().enqueued == len(obs)
    return total / (rounds * len(obs))


def bench_worker(envs: list[CapturedItem], rounds: int, chunk: int = 64, *, single: bool = False) -> float:
    """Seconds per envelope for lane drain + ordered merge + batch accounting: each drained
    chunk pushed at once (``push_all``) and released with ``release_entries``, as the
    worker does; ``single``: ``push`` per envelope and ``release``."""
    total = 0.0
    batches = 0
    batcher = Batcher(BatchLimits(max_items=256, max_bytes=16 << 20, max_sim_span_ns=1_000_000_000))
    add = batcher.add
    for _ in range(rounds):
        lanes = [
            Lane(LaneSpec(name=name, max_items=len(envs) + 1, max_bytes=1 << 60)) for name in LaneName
        ]
        by_name = {lane.spec.name: lane for lane in lanes}
        for e in envs:
            by_name[e.lane].try_publish(e)
        merge = OrderedMerge()
        push, push_all, release = merge.push, merge.push_all, merge.release_entries
        released = 0
        t0 = time.perf_counter()
        while released < len(envs):
            for lane in lanes:
                if single:
                    for e in lane.drain(chunk):
                        push(e)
                else:
                    drained = lane.drain(chunk)
                    if drained:
                        push_all(cast("list[CapturedItem | CapturedRun]", drained))
            for item in release():
                if item.__class__ is CapturedItem and add(item.generation, item.sim_time_ns, item.size or 0):
                    batches += 1
                released += 1
        total += time.perf_counter() - t0
        assert released == len(envs)
    assert batches > 0
    return total / (rounds * len(envs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=3_072, help="envelopes per round (cache-hot window)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    add_json_flag(parser)
    args = parser.parse_args()
    envs = _script(args.n)
    base = _best(lambda: bench_deque(envs, args.rounds), args.repeat)
    capture = _best(lambda: bench_capture(envs, args.rounds), args.repeat)
    worker = _best(lambda: bench_worker(envs, args.rounds), args.repeat)
    single = _best(lambda: bench_worker(envs, args.rounds, single=True), args.repeat)
    capture_ratio = capture / base
    worker_rate = 1.0 / worker
    print(f"baseline deque append+popleft pair: {base * 1e9:8.1f} ns")
    ok1 = "ok" if capture_ratio <= CAPTURE_TARGET_RATIO else "MISSED"
    print(
        f"capture path (validate + try_publish): {capture * 1e9:8.1f} ns/envelope = "
        f"{capture_ratio:5.1f}x deque pair (target <= {CAPTURE_TARGET_RATIO:.0f}x) {ok1}"
    )
    ok2 = "ok" if worker_rate >= WORKER_TARGET_PER_S else "MISSED"
    print(
        f"worker path (drain + merge + batch):  {worker * 1e9:8.1f} ns/envelope = "
        f"{worker / base:5.1f}x deque pair = {worker_rate:,.0f} envelopes/s "
        f"(target >= {WORKER_TARGET_PER_S:,.0f}/s) {ok2}"
    )
    print(f"  the same with push per envelope and release (single-push, before stop 45): {single * 1e9:8.1f} ns/envelope")
    figures = Figures("bench_core")
    figures.add("deque_pair_ns", base * 1e9)
    figures.add("capture_over_deque_pair", capture_ratio, CAPTURE_TARGET_RATIO, "<=")
    figures.add("worker_core_envelopes_per_s", worker_rate, WORKER_TARGET_PER_S, ">=")
    figures.add("worker_core_single_push_envelopes_per_s", 1.0 / single)
    figures.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
