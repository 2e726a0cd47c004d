"""Columnar capture, measured before it is built (docs/design/columnar-capture.md, step 3).

Two figures for a 90-channel synthetic tick at 120 Hz (5,040 bytes), each against today's
envelope-per-tick path, measured in this one process with interleaved rounds:

1. **Simulation thread, per tick** (``time.thread_time``): today's packed observer (stamp
   one envelope + Record's pump: validate, advance, ``try_admit``) against the block
   path's per-tick work -- copy the backend's buffer into the next row of a preallocated
   block and append the tick and sim time to two lists -- plus the block's flush,
   amortized over ``k`` ticks.  The flush is measured as what it would do: freeze the
   filled rows, allocate the next block, turn the two lists into arrays, and admit ONE
   envelope through today's real stamp + pump (an upper bound of one block's admission:
   the block pump does the same validate/advance/admit once).  Both sides include
   ``host.advance`` and the backend's ``sample_numeric_packed`` (the "bare" row).
2. **Writer worker, per record** (its thread's CPU clock, as ``bench_worker``): today's
   path against a prototype where the benchmark plays Core's block stamp -- it takes ``k``
   global and capture sequences from the bus under its lock and admits ONE carrier of a
   ``(k, record_bytes)`` read-only block into the numeric lane, charged ``k * record_bytes``
   -- and the worker's run builder turns each block carrier into one ``CapturedRun`` whose
   ``RecordColumns`` are two ``arange`` s, the sim-time column and the block itself, with no
   per-tick object.  Everything downstream (merge, record tables, file writes,
   finalization with its read-back validation) is today's code; the Run must succeed.
   Each with its GIL-held part (minus its CPU in the lease's ``os.write``/``writev``).  The
   writer now sends few large parts in one ``writev`` itself: ``block_vectored`` is ``block``.

``--unpaced`` measures instead the wall time per tick of an unpaced loop (``backend.step``,
``host.advance``, the capture, the host's flow-control wait) with the worker running
concurrently, Record off / today / blocks: a whole-loop on/off ratio.  Wall time: run it on
a quiet machine only.

    python benchmarks/bench_columnar_capture.py [--ticks 12000] [--rounds 3] [--k 40] [--worker-only] [--unpaced] [--json]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
from _record_host import RecordRun
from _report import Figures, add_json_flag, load_average
from _write_clock import WriteClock, write_clock
from bench_worker import _settle, _worker_cpu

import fastsim_recording_format.writer as fsr_writer
from fastsim_embedded.session.loop import observation_publisher
from fastsim_record.core.captured import CapturedRun, LaneName
from fastsim_record.core.lane import ACCEPTED
from fastsim_record.ports.sinks import RecordColumns

CHUNK = 60  # ticks between untimed drains (0.5 simulated seconds)


def _ticks(run: RecordRun, ticks: int, per_tick: Any, plugin: Any) -> float:
    """Thread CPU seconds of ``per_tick(tick, sim_time_ns)`` over ``ticks`` ticks, drained between chunks."""
    host = run.host
    dt = 1e9 / host.context.sensor_hz
    cpu = 0.0
    for start in range(1, ticks + 1, CHUNK):
        t0 = time.thread_time()
        for tick in range(start, min(ticks, start + CHUNK - 1) + 1):
            t = round(tick * dt)
            host.advance(tick, t)
            per_tick(tick, t)
        cpu += time.thread_time() - t0
        _settle(plugin)
    return cpu


def sim_round(ticks: int, k: int) -> dict[str, float]:
    """Per-tick simulation-thread µs: bare, today's stamp+pump, the block path's row copy, its flush."""
    run = RecordRun.build(record=True, channels=90)
    plugin: Any = run.plugin.wiring  # type: ignore[union-attr]
    backend: Any = run.prepared.backend  # the synthetic backend: ``PackedSampling``
    backend.step(1)
    sample = backend.sample_numeric_packed
    observe = observation_publisher(run.host.observations, backend)
    assert observe is not None
    nbytes = sample().nbytes
    out: dict[str, float] = {}

    def bare(_tick: int, _t: int) -> None:
        sample()

    def today(_tick: int, _t: int) -> None:
        observe()

    def block_path(generic: bool) -> Any:
        """Core's per-tick block work as a closure: copy the tick into the next row (a
        byte copy through memoryviews for any layout, or one row assignment when every
        channel has the buffer's dtype), append its tick and time; a full block is swapped
        for a fresh one (the flush's admission is measured on its own below)."""
        width = sample().size
        block = np.empty((k, width), sample().dtype)
        rows = memoryview(block.data).cast("B")
        at = 0
        times: list[int] = []
        ticks_: list[int] = []

        def row(tick: int, t: int) -> None:
            nonlocal block, rows, at, times, ticks_
            if generic:
                rows[at:at + nbytes] = memoryview(sample().data).cast("B")
            else:
                block[len(times)] = sample()
            at += nbytes
            times.append(t)
            ticks_.append(tick)
            if len(times) == k:
                block = np.empty((k, width), block.dtype)
                rows = memoryview(block.data).cast("B")
                at = 0
                times, ticks_ = [], []

        return row

    for name, fn in (("bare", bare), ("today", today), ("row", block_path(False)), ("row_generic", block_path(True))):
        out[name] = 1e6 * _ticks(run, ticks, fn, plugin) / ticks
    # the flush: freeze, two arrays, one real admission (stamp + pump); the fresh block
    # is already in the row figures
    flushes = max(1, ticks // k)
    times = list(range(k))
    t0 = time.thread_time()
    for _ in range(flushes):
        block = np.empty((k, nbytes // 8))
        block.flags.writeable = False
        np.array(times, np.int64)
        np.array(times, np.int64)
        observe()
    out["flush"] = 1e6 * (time.thread_time() - t0) / flushes
    out["block"] = out["row"] + out["flush"] / k
    out["block_generic"] = out["row_generic"] + out["flush"] / k
    outcome, _ = run.finish()
    if outcome.status != "succeeded":
        raise SystemExit(f"bench_columnar_capture: the Run did not succeed: {outcome.reason}")
    return out


class BlockCarrier:
    """The prototype's block envelope: k ticks of one generation (what Core would stamp)."""

    __slots__ = ("block", "first_capture", "first_global", "generation", "sim_time_ns")

    def __init__(self, first_global: int, first_capture: int, generation: int, sim_time_ns: Any, block: Any) -> None:
        self.first_global, self.first_capture, self.generation = first_global, first_capture, generation
        self.sim_time_ns, self.block = sim_time_ns, block


def _block_split(original: Any, stream: str, record_bytes: int) -> Any:
    """The worker's run builder with the prototype's one new row: a block carrier -> one CapturedRun."""

    def split(items: list[Any], materialize: Any) -> list[Any]:
        if not items or items[0].__class__ is not BlockCarrier:
            built: list[Any] = original(items, materialize)
            return built
        out = []
        for carrier in items:
            n = len(carrier.sim_time_ns)
            g = np.arange(carrier.first_global, carrier.first_global + n, dtype=np.uint64)
            c = np.arange(carrier.first_capture, carrier.first_capture + n, dtype=np.uint64)
            columns = RecordColumns(stream, carrier.generation, g, c, carrier.sim_time_ns, record_bytes,
                                    carrier.block.reshape(-1), c.astype(np.int64), True)
            out.append(CapturedRun(
                source="observations", stream=stream, lane=LaneName.NUMERIC, generation=carrier.generation,
                first_global=carrier.first_global, last_global=carrier.first_global + n - 1,
                first_capture=carrier.first_capture, last_capture=carrier.first_capture + n - 1, payload=columns,
            ))
        return out

    return split


def worker_round(ticks: int, k: int, blocks: bool, vectored: bool = False) -> dict[str, float]:
    """Worker CPU µs per numeric record (all, GIL-held, in the writes), today's envelopes or
    the prototype's blocks; ``vectored``: ``writer._FEW_PARTS = 0`` (see the module header)."""
    few_parts = fsr_writer._FEW_PARTS
    fsr_writer._FEW_PARTS = 0 if vectored else few_parts
    try:
        with write_clock() as clock:
            return _worker_round(ticks, k, blocks, clock)
    finally:
        fsr_writer._FEW_PARTS = few_parts


def _stamp_block(host: Any, handle: Any, times: Any, block: Any, record_bytes: int) -> object:
    """Core's block stamp, played here: k global and capture sequences at once, then one
    admission of the block into the numeric lane; the lane's answer."""
    bus, n = host.bus, len(times)
    with bus._lock:
        g0 = bus._global + 1
        bus._global += n
        c0 = bus._source_seq.get("observations", 0) + 1
        bus._source_seq["observations"] = c0 + n - 1
    host.observations._observed += n
    with handle.lock:
        return handle.lane.try_admit(BlockCarrier(g0, c0, 0, times, block), n * record_bytes)


def _worker_round(ticks: int, k: int, blocks: bool, clock: WriteClock) -> dict[str, float]:
    run = RecordRun.build(record=True, channels=90)
    host, backend = run.host, run.prepared.backend
    plugin: Any = run.plugin.wiring  # type: ignore[union-attr]
    sample: Any = backend.sample_numeric_packed  # type: ignore[attr-defined]  # the synthetic backend's
    record_bytes = int(plugin.encoders["observations"].record_bytes)
    backend.step(1)
    observe = observation_publisher(host.observations, backend)
    assert observe is not None
    handle = plugin.lanes[LaneName.NUMERIC]
    worker = plugin.worker
    worker._runs.split = _block_split(worker._runs.split, "observations", record_bytes)
    dt = 1e9 / host.context.sensor_hz
    _settle(plugin)
    clock.worker = worker.thread.ident
    cpu0, write0 = _worker_cpu(plugin), clock.cpu
    records0 = worker._records.encoded
    for start in range(1, ticks + 1, CHUNK * 2):
        stop = min(ticks, start + CHUNK * 2 - 1)
        if not blocks:
            for tick in range(start, stop + 1):
                host.advance(tick, round(tick * dt))
                observe()
        else:
            for first in range(start, stop + 1, k):
                last = min(stop, first + k - 1)
                n = last - first + 1
                block = np.empty((n, record_bytes), np.uint8)
                for i in range(n):
                    block[i] = sample().view(np.uint8)
                block.flags.writeable = False
                times = np.array([round(t * dt) for t in range(first, last + 1)], np.int64)
                _stamp_block(host, handle, times, block, record_bytes)
        _settle(plugin)
    cpu, written = _worker_cpu(plugin) - cpu0, clock.cpu - write0
    records = worker._records.encoded - records0
    outcome, _ = run.finish()
    if outcome.status != "succeeded":
        raise SystemExit(f"bench_columnar_capture: the Run did not succeed: {outcome.reason}")
    per = 1e6 / max(records, 1)
    return {"us_per_record": per * cpu, "write_us_per_record": per * written, "gil_us_per_record": per * (cpu - written)}


def unpaced_round(ticks: int, k: int, mode: str) -> dict[str, float]:
    """Wall µs per tick of an unpaced loop (``backend.step``, ``host.advance``, then the
    capture of ``mode``: ``off``, ``today`` or ``block``), with the writer worker running
    concurrently under the same GIL and the host's flow-control wait (the gauge) per tick.
    ``block`` plays Core's block stamp as ``worker_round`` does, pressing the gauge as the
    pump would; the Run must succeed with its file validated."""
    run = RecordRun.build(record=mode != "off", channels=90)
    host, backend = run.host, run.prepared.backend
    backend_any: Any = backend
    dt = 1e9 / host.context.sensor_hz
    step, advance = backend.step, host.advance
    waited = 0.0
    if mode == "off":
        t0 = time.perf_counter()
        for tick in range(1, ticks + 1):
            step(1)
            advance(tick, round(tick * dt))
        wall = time.perf_counter() - t0
    else:
        plugin: Any = run.plugin.wiring  # type: ignore[union-attr]
        record_bytes = int(plugin.encoders["observations"].record_bytes)
        handle = plugin.lanes[LaneName.NUMERIC]
        gauge = handle.gauge
        worker = plugin.worker
        worker._runs.split = _block_split(worker._runs.split, "observations", record_bytes)
        observe = observation_publisher(host.observations, backend)
        assert observe is not None
        sample = backend_any.sample_numeric_packed
        block = np.empty((k, record_bytes // 8))
        times: list[int] = []

        def flush() -> None:
            nonlocal block, times
            n = len(times)
            frozen = block[:n]
            frozen.flags.writeable = False
            admission = _stamp_block(host, handle, np.array(times, np.int64), frozen.view(np.uint8), record_bytes)
            if admission is not ACCEPTED:
                handle.wake.set()
                gauge.press()
            block = np.empty((k, record_bytes // 8))
            times = []

        t0 = time.perf_counter()
        for tick in range(1, ticks + 1):
            step(1)
            t = round(tick * dt)
            advance(tick, t)
            if mode == "today":
                observe()
            else:
                block[len(times)] = sample()
                times.append(t)
                if len(times) == k:
                    flush()
            if gauge.pressed:  # the host's flow control (FC2-FC3), flushing first (BK5)
                if times:
                    flush()
                w0 = time.perf_counter()
                while not gauge.wait_relieved(0.05):
                    pass
                waited += time.perf_counter() - w0
        if times:
            flush()
        wall = time.perf_counter() - t0
    outcome, _ = run.finish()
    if outcome.status != "succeeded":
        raise SystemExit(f"bench_columnar_capture: the {mode} Run did not succeed: {outcome.reason}")
    return {"us_per_tick": 1e6 * wall / ticks, "waited_s": waited}


def unpaced(args: argparse.Namespace) -> int:
    """``--unpaced``: ``unpaced_round`` for off, today and block, interleaved; Record's added
    wall per tick and the loop's on/off ratio, today and with blocks."""
    load = load_average()
    rows: dict[str, list[dict[str, float]]] = {"off": [], "today": [], "block": []}
    for round_ in range(args.rounds):
        names = list(rows) if round_ % 2 == 0 else list(reversed(rows))
        for name in names:
            rows[name].append(unpaced_round(args.ticks, args.k, name))
        print(f"  round {round_ + 1}: " + " ".join(
            f"{n} {v[-1]['us_per_tick']:.1f} us/tick (waited {v[-1]['waited_s']:.2f} s)" for n, v in rows.items()
        ), flush=True)
    med = {n: statistics.median(r["us_per_tick"] for r in v) for n, v in rows.items()}
    print(f"\nunpaced loop, 90 channels, k = {args.k}, {args.ticks} ticks, {args.rounds} rounds (load {load})")
    figures = Figures("bench_columnar_capture_unpaced")
    figures.add("off_us_per_tick", med["off"])
    for name in ("today", "block"):
        added, ratio = med[name] - med["off"], med["off"] / med[name]
        print(f"  {name:6s}: Record adds {added:7.2f} us/tick, on/off {ratio:5.3f}")
        figures.add(f"{name}_added_us_per_tick", added)
        figures.add(f"{name}_on_off_ratio", ratio, 0.7, ">=")
        figures.add(f"{name}_waited_s", statistics.median(r["waited_s"] for r in rows[name]))
    figures.emit(args.json)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=12000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--k", type=int, default=40, help="ticks per block (k_max)")
    parser.add_argument("--worker-only", action="store_true",
                        help="only the writer worker's rounds (no simulation-thread figures)")
    parser.add_argument("--unpaced", action="store_true",
                        help="instead: wall us per tick of an unpaced loop, off / today / block (a quiet machine only)")
    add_json_flag(parser)
    args = parser.parse_args()
    if args.unpaced:
        return unpaced(args)
    load = load_average()
    sims: list[dict[str, float]] = []
    workers: dict[str, list[dict[str, float]]] = {"today": [], "block": [], "block_vectored": []}
    variants = {"today": (False, False), "block": (True, False), "block_vectored": (True, True)}
    for round_ in range(args.rounds):
        if not args.worker_only:
            sims.append(sim_round(args.ticks, args.k))
        names = list(variants) if round_ % 2 == 0 else list(reversed(variants))
        for name in names:
            workers[name].append(worker_round(args.ticks, args.k, *variants[name]))
        sim = "" if not sims else "sim us/tick " + " ".join(f"{n} {v:.2f}" for n, v in sims[-1].items()) + "; "
        print(f"  round {round_ + 1}: {sim}worker us/record (GIL-held) "
              + " ".join(f"{n} {v[-1]['us_per_record']:.2f} ({v[-1]['gil_us_per_record']:.2f})"
                         for n, v in workers.items()), flush=True)

    def med(key: str) -> float:
        return statistics.median(s[key] for s in sims)

    def wmed(name: str, key: str) -> float:
        return statistics.median(r[key] for r in workers[name])

    figures = Figures("bench_columnar_capture")
    print(f"\ncolumnar capture, 90 channels, k = {args.k}, {args.ticks} ticks, {args.rounds} rounds (load {load})")
    if sims:
        bare = med("bare")
        cap = {name: med(name) - bare for name in ("today", "block", "block_generic")}
        print(f"  sim thread, capture per tick (minus bare {bare:.2f} us):")
        for name, value in cap.items():
            print(f"    {name:24s}: {value:6.2f} us   ratio to today {value / cap['today']:5.2f}")
            figures.add(f"sim_capture_{name}_us_per_tick", value)
        print(f"  block flush (one admission)   : {med('flush'):6.2f} us per block")
        figures.add("sim_bare_us_per_tick", bare)
        figures.add("block_flush_us", med("flush"))
    print("  writer worker CPU per numeric record (GIL-held: minus its CPU inside os.write/os.writev):")
    w = {name: wmed(name, "us_per_record") for name in workers}
    for name, value in w.items():
        gil = wmed(name, "gil_us_per_record")
        print(f"    {name:24s}: {value:6.2f} us   ratio to today {value / w['today']:5.2f}   GIL-held {gil:6.2f} us")
        figures.add(f"worker_{name}_us_per_record", value, 3.0, "<=")
        figures.add(f"worker_{name}_gil_us_per_record", gil)
        figures.add(f"worker_{name}_write_us_per_record", wmed(name, "write_us_per_record"))
    figures.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
