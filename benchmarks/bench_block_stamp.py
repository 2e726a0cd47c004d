"""Core's capture of one packed tick on the simulation thread: per-tick stamp vs observation blocks.

The embedded host's real observer (``loop.observation_publisher``) for a 90-channel
synthetic tick at 120 Hz (5,040 bytes), with one do-nothing subscriber per source, so the
figure is Core's own work: ``sample()`` + the stamp (per tick: the freeze check, four
objects, the bus lock, the envelope, one sink call; blocks: the bus lock, two sequences,
one row copy, tick and time into two ``int64`` arrays, and -- every k ticks -- the flush:
one ``ObservationBlock`` envelope, one sink call, a fresh block).  ``time.thread_time``
of ``advance`` + observe over ``--ticks`` ticks, minus the same loop over bare
``sample()``; interleaved rounds, medians (issue 26, ``docs/notes/issue-26-blkhost.md``).

    python benchmarks/bench_block_stamp.py [--ticks 20000] [--rounds 5] [--k 40] [--json]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _record_host import write_run
from _report import Figures, add_json_flag, load_average

from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.loop import observation_publisher


def _ignore(_: object) -> None:
    """A subscriber that does nothing."""


def _host(root: Path, max_block: int) -> tuple[EmbeddedHost, Any, Any]:
    """A 90-channel Run whose every source has one do-nothing subscriber, observations with ``max_block``."""
    root.mkdir(parents=True)
    prepared = prepare_run(write_run(root, record=True, channels=90, sensor_hz=120.0), duration_s=600.0)
    host = EmbeddedHost.create(
        capture=prepared.capture, channels=prepared.channels, output_dir=root / "out",
        sensor_hz=prepared.sensor_hz, physics_hz=prepared.physics_hz, rate_policy=prepared.rate_policy,
    )
    prepared.backend.reset(0)
    core = host.core_for("record")
    core.request_grant("observation")
    for source in sorted(prepared.capture.sources):
        core.subscribe(source, _ignore, max_block=max_block if source == "observations" else 1)
    host.bus.close_history()
    host.control_producers_started()
    backend = prepared.backend
    backend.step(1)
    observe = observation_publisher(host.observations, backend, max_block)
    assert observe is not None  # the plan selects the numeric channels
    return host, backend, observe


def _cpu(host: EmbeddedHost, fn: Any, ticks: int, first: int) -> float:
    dt = 1e9 / host.context.sensor_hz
    advance = host.advance
    t0 = time.thread_time()
    for tick in range(first, first + ticks):
        advance(tick, round(tick * dt))
        fn()
    return time.thread_time() - t0


def main() -> None:
    """Interleaved rounds of bare / per-tick / blocks; medians in µs a tick."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--k", type=int, default=40)
    add_json_flag(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fsr-bench-") as scratch:
        tick_host, tick_backend, per_tick = _host(Path(scratch) / "tick", 1)
        block_host, block_backend, blocks = _host(Path(scratch) / "block", args.k)
        assert block_host.bus.block_size == args.k
        assert tick_host.bus.block_size == 1
        bare = tick_backend.sample_numeric_packed
        rounds: dict[str, list[float]] = {"bare": [], "per_tick": [], "blocks": []}
        first = 1
        for _ in range(args.rounds):
            for name, host, fn in (("bare", tick_host, bare), ("per_tick", tick_host, per_tick),
                                   ("blocks", block_host, blocks)):
                rounds[name].append(1e6 * _cpu(host, fn, args.ticks, first) / args.ticks)
            first += args.ticks
        del block_backend
    med = {name: statistics.median(values) for name, values in rounds.items()}
    tick_us, block_us = med["per_tick"] - med["bare"], med["blocks"] - med["bare"]
    print(f"k = {args.k}, {args.ticks} ticks x {args.rounds} interleaved rounds, load {load_average()}")
    print(f"{'':>22} {'median us/tick':>14}   rounds")
    for name, values in rounds.items():
        print(f"{name:>22} {med[name]:>14.3f}   {' '.join(f'{v:.2f}' for v in values)}")
    print(f"{'capture, per tick':>22} {tick_us:>14.3f}")
    print(f"{'capture, blocks':>22} {block_us:>14.3f}   ratio {block_us / tick_us:.2f}")
    figures = Figures("bench_block_stamp")
    figures.add("sim_bare_us_per_tick", med["bare"])
    figures.add("sim_capture_per_tick_us", tick_us)
    figures.add("sim_capture_blocks_us", block_us)
    figures.add("sim_capture_blocks_ratio", block_us / tick_us)
    figures.extra["k"] = args.k
    figures.emit(args.json)


if __name__ == "__main__":
    main()
