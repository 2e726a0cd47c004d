"""Sustained load: the synthetic backend at 120 Hz with 90 numeric channels for 60
simulated seconds, the host doing ~1 ms of work per tick, Record on vs Record off.

Targets: zero loss (no lane lost or failed an envelope, the Run succeeded and committed)
and the simulation thread slowed by at most 3% against Record off.

The simulation thread is the embedded host's run loop (``run_session``): backend step,
control, observation capture and events every tick, plus the host work.  Its time is
the loop's wall time from the first to the last tick (the progress callback), measured
for both configurations in this one process.  The host work is calibrated to ~1 ms and
comes in two kinds:

  * ``c``  (default): work in C that releases the GIL, like a physics step
    (SHA-256 of a buffer), so Record's writer worker runs beside it;
  * ``py``: a pure-Python busy loop that holds the GIL, a worst case in which every
    microsecond of the worker's encoding competes with the simulation thread.

Two pacings: ``real`` runs the ticks on a 120 Hz wall clock (as a simulation shown to
a robot does) and measures only the busy part of each tick; ``none`` runs them back to
back and measures the loop's wall time (a stress case: the worker then competes with
an always-busy simulation thread).

Run: ``python benchmarks/bench_sustained.py [--work c|py|both] [--pace real|none|both]
[--seconds 60]``.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from _record_host import RECORD, lane_losses, write_run

from fastsim_contract.protocols import Plugin, PluginContext
from fastsim_embedded.compile import prepare_run
from fastsim_embedded.session import run_session

TARGET_SLOWDOWN = 0.03
WORK_S = 0.001


def _calibrate_c() -> Callable[[int], None]:
    """SHA-256 over a buffer sized to take ~1 ms (GIL released for the whole hash)."""
    size = 1 << 16
    while True:
        data = bytes(size)
        t0 = time.perf_counter()
        for _ in range(20):
            hashlib.sha256(data).digest()
        per = (time.perf_counter() - t0) / 20
        if per >= WORK_S or size > 1 << 26:
            break
        size = int(size * max(1.2, WORK_S / max(per, 1e-6)))
    data = bytes(int(size * WORK_S / per))

    def work(_tick: int) -> None:
        hashlib.sha256(data).digest()

    return work


def _calibrate_py() -> Callable[[int], None]:
    """A GIL-holding Python loop of ~1 ms."""
    def work(_tick: int) -> None:
        end = time.perf_counter() + WORK_S
        while time.perf_counter() < end:
            pass

    return work


class NullConsumer:
    """Stands in for Record with the same capture plan: subscribes do-nothing sinks."""

    def __init__(self, context: PluginContext) -> None:
        self.core = context.core

    def prepare(self) -> None:
        """Grant and subscribe like Record, without pumps, lanes or a worker."""
        plan = self.core.run.capture
        if plan.observation_channels:
            self.core.request_grant("observation")
        for source in sorted(plan.sources):
            self.core.subscribe(source, _ignore)

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> None:
        """Nothing to stop."""

    def close(self) -> None:
        """Nothing to close."""


def _ignore(_: object) -> None:
    return None


def _null_factory(context: PluginContext) -> Plugin:
    return NullConsumer(context)


@attrs.define(eq=False)
class Paced:
    """Host work that also paces the loop to real time; measures the busy part of each tick.

    Busy time is everything the simulation thread does between waking for a tick and
    going to sleep until the next one (backend, capture, Record's pumps, host work, and
    any wait for the GIL); the sleep itself is excluded.
    """

    work: Callable[[int], None]
    period_s: float
    busy_s: float = 0.0
    overruns: int = 0
    _start: float | None = None
    _woke: float = 0.0

    def __call__(self, tick: int) -> None:
        self.work(tick)
        now = time.perf_counter()
        if self._start is None:
            self._start = now
        else:
            self.busy_s += now - self._woke
        deadline = self._start + tick * self.period_s
        if deadline > now:
            time.sleep(deadline - now)
        else:
            self.overruns += 1
        self._woke = time.perf_counter()


def run_once(
    record: bool, seconds: float, work: Callable[[int], None], *, null: bool = False,
    paced: bool = False,
) -> tuple[float, int, dict[str, Any], str]:
    """(sim-thread seconds, ticks, Record summary, status) of one Run.

    Unpaced: the loop's wall time.  Paced (real time at 120 Hz): the busy time only.
    """
    pacer = Paced(work, 1.0 / 120.0) if paced else None
    work = pacer if pacer is not None else work
    tmp = Path(tempfile.mkdtemp(prefix="fsr-sustained-"))
    try:
        run_file = write_run(tmp, record=record, channels=90, sensor_hz=120.0)
        prepared = prepare_run(run_file, duration_s=seconds)
        marks: dict[str, float] = {}

        def progress(tick: int, total: int) -> None:
            now = time.perf_counter()
            marks.setdefault("first", now)
            marks["last"] = now
            marks["ticks"] = tick

        factories = {RECORD: _null_factory} if null else None
        result = run_session(prepared, tmp / "out", host_work=work, progress=progress, factories=factories)
        outcome = result.outcome
        summary: dict[str, Any] = {}
        for finalizer in outcome.finalizers:
            summary = dict(finalizer.result.summary)
        if record and not null and not (tmp / "out" / "episode.fsr").is_file():
            raise SystemExit(f"bench_sustained: no committed file ({outcome.reason})")
        loop = pacer.busy_s if pacer is not None else marks["last"] - marks["first"]
        return loop, int(marks["ticks"]), summary, outcome.status
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench(kind: str, seconds: float, repeat: int, paced: bool) -> bool:
    """Print one work kind's figures; True when both targets hold."""
    work = _calibrate_c() if kind == "c" else _calibrate_py()
    offs: list[float] = []
    nulls: list[float] = []
    ons: list[float] = []
    lost = 0
    summary: dict[str, Any] = {}
    statuses: set[str] = set()
    ticks = 0
    for _ in range(repeat):
        off, ticks, _, status_off = run_once(False, seconds, work, paced=paced)
        nul, _, _, status_null = run_once(True, seconds, work, null=True, paced=paced)
        on, _, summary, status_on = run_once(True, seconds, work, paced=paced)
        offs.append(off)
        nulls.append(nul)
        ons.append(on)
        lost += lane_losses(summary)
        statuses |= {status_off, status_null, status_on}
    off, nul, on = min(offs), min(nulls), min(ons)
    slowdown = on / off - 1.0
    own = on / nul - 1.0
    n = max(ticks - 1, 1)
    lanes = summary.get("lanes", {})
    ok = lost == 0 and statuses == {"succeeded"} and slowdown <= TARGET_SLOWDOWN
    mode = "paced to real time, busy time" if paced else "unpaced, loop wall time"
    print(f"sustained, host work '{kind}' (~1 ms/tick), 120 Hz x {seconds:g} s = {ticks} ticks, "
          f"90 channels, {mode}, best of {repeat}")
    print(f"  Record off                 : {off:8.3f} s sim-thread time")
    print(f"  Core capture, null consumer: {nul:8.3f} s  (+{(nul - off) / n * 1e6:.1f} us/tick: backend "
          "sampling + Core stamping, paid only when Record is selected)")
    print(f"  Record on                  : {on:8.3f} s  (+{(on - off) / n * 1e6:.1f} us/tick vs off, "
          f"+{(on - nul) / n * 1e6:.1f} us/tick vs null consumer)")
    print(f"  slowdown vs Record off     : {slowdown * 100:+.2f} %  (target <= {TARGET_SLOWDOWN * 100:.0f} %)")
    print(f"  slowdown from Record itself: {own * 100:+.2f} %  (Record on vs the null consumer)")
    print(f"  writer worker CPU          : {summary.get('worker_cpu_s', 0.0) / n * 1e6:.1f} us/tick on its own thread")
    print(f"  loss       : {lost} envelopes lost or failed (target 0); statuses {sorted(statuses)}")
    for name, lane in lanes.items():
        print(f"  lane {name:8s}: enqueued {lane['enqueued']}, high-water {lane['high_water']}/"
              f"{lane['capacity_items']}, lost {lane['lost']}")
    print(f"  writer     : {summary.get('batches')} batches, {summary.get('payload_bytes')} payload bytes, "
          f"batch {summary.get('batch_elapsed_s', 0.0):.3f} s, finalize "
          f"{summary.get('finalize_elapsed_s', 0.0):.3f} s, readback {summary.get('readback_elapsed_s', 0.0):.3f} s")
    print(f"  verdict    : {'PASS' if ok else 'FAIL'}")
    return ok


def main() -> int:
    """Run the selected work kinds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", choices=("c", "py", "both"), default="c")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--pace", choices=("real", "none", "both"), default="both",
                        help="real: 120 Hz wall-clock ticks (busy time measured); none: back-to-back ticks")
    args = parser.parse_args()
    kinds = ("c", "py") if args.work == "both" else (args.work,)
    paces = {"real": (True,), "none": (False,), "both": (True, False)}[args.pace]
    results = [bench(kind, args.seconds, args.repeat, paced) for paced in paces for kind in kinds]
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
