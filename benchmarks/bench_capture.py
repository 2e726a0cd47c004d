"""Simulation-thread cost per tick of Record's capture path: Record on vs Record off.

Per tick the host publishes what a 120 Hz scene with 90 numeric channels publishes:
one observation tick (90 channels, one atomic item, published the way the run loop
does it: the synthetic backend's ``PackedSampling`` buffer), a control command (audit
and result), one plugin event and one lifecycle item.  With Record off the Run selects no
plugin, so the same publisher calls find an empty capture plan and return at once.
With Record on, each call stamps an envelope and runs Record's pump (validation plus a
non-waiting ``try_publish``) on this thread; the writer worker encodes and writes on
its own thread, and what it costs this thread through the GIL is included.

Ticks are published in chunks of 0.5 simulated seconds; between chunks the loop waits,
untimed, for the worker to drain (a paced simulation gives it that time), and only the
publishing is timed.  A third configuration keeps Record's capture plan but subscribes
do-nothing sinks, separating Core's capture cost (stamping, delivery) from Record's
pumps.  Reports wall and thread-CPU microseconds per tick, the microseconds Record adds,
and the ratio, each measured in this one process (best of ``--repeat``).

Every configuration publishes and finishes under the collector policy ``run_session``
gives a whole Run (``fastsim_embedded.session.gc_policy``: startup heap frozen, gen-0
threshold raised), as ``fsr record`` does; ``FASTSIM_RUN_GC=inherit`` measures without it.
Run: ``python benchmarks/bench_capture.py``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from _record_host import RecordRun, lane_losses
from _report import Figures, add_json_flag

from fastsim_embedded.backends.base import ControlCommand, ControlOutcome
from fastsim_embedded.session.gc_policy import gc_policy_enabled, run_gc_policy
from fastsim_embedded.session.loop import observation_publisher


def _drained(run: RecordRun) -> None:
    """Wait (untimed) until Record's worker has drained every lane."""
    lanes = getattr(getattr(run.plugin, "wiring", None), "lanes", {})  # what bootstrap.wire built
    while any(handle.lane.depth for handle in lanes.values()):
        for handle in lanes.values():  # the worker polls once a second: wake it now
            handle.wake.set()
        time.sleep(0.001)


def _loop(run: RecordRun, ticks: int, observe: Callable[[], object] | None, chunk: int = 60) -> tuple[float, float]:
    """Publish ``ticks`` ticks in chunks of ``chunk``; timed (wall, thread CPU) seconds.

    Between chunks (0.5 simulated seconds at 120 Hz) the loop waits, untimed, for the
    writer worker to drain, as a paced simulation would give it time to; only the
    publishing itself is timed.
    """
    host = run.host
    command = ControlCommand("c", "set_joint_offset", "robot", {"offset": 0.1})
    outcome = ControlOutcome(True)
    dt_ns = 1e9 / host.context.sensor_hz
    wall = cpu = 0.0
    for start in range(1, ticks + 1, chunk):
        _drained(run)
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        for tick in range(start, min(ticks, start + chunk - 1) + 1):
            host.advance(tick, round(tick * dt_ns))
            host.events.publish_control_issued(command)
            host.events.publish_control_applied(command, outcome)
            if observe is not None:
                observe()
            host.events.publish_plugin_event("scene.marker", {"tick": tick})
            host.events.publish_lifecycle("tick.done", tick=tick)
        wall += time.perf_counter() - wall0
        cpu += time.thread_time() - cpu0
    return wall, cpu


def measure(record: bool, ticks: int, channels: int, null: bool = False) -> tuple[float, float, int]:
    """Per-tick wall and CPU seconds, and Record's lost/failed envelope count."""
    run = RecordRun.build(record=record, channels=channels, null_consumer=null)
    if null:  # as a session does after its plugins started (and Record's build does): no
        run.host.bus.close_history()  # startup history kept growing with every tick
        run.host.control_producers_started()
    backend = run.prepared.backend
    backend.step(1)
    with run_gc_policy(gc_policy_enabled()):  # as run_session: the ticks and the finish
        wall, cpu = _loop(run, ticks, observation_publisher(run.host.observations, backend))
        outcome, summary = run.finish()
    if record and not null and outcome.status != "succeeded":
        raise SystemExit(f"bench_capture: Record run did not succeed: {outcome.reason}")
    return wall / ticks, cpu / ticks, lane_losses(summary)


def main() -> int:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=6000)
    parser.add_argument("--channels", type=int, default=90)
    parser.add_argument("--repeat", type=int, default=3)
    add_json_flag(parser)
    args = parser.parse_args()
    off: list[tuple[float, float]] = []
    null: list[tuple[float, float]] = []
    on: list[tuple[float, float]] = []
    lost = 0
    for _ in range(args.repeat):
        w, c, _ = measure(False, args.ticks, args.channels)
        off.append((w, c))
        w, c, _ = measure(True, args.ticks, args.channels, null=True)
        null.append((w, c))
        w, c, n = measure(True, args.ticks, args.channels)
        on.append((w, c))
        lost += n
    off_wall, off_cpu = min(w for w, _ in off), min(c for _, c in off)
    null_wall, null_cpu = min(w for w, _ in null), min(c for _, c in null)
    on_wall, on_cpu = min(w for w, _ in on), min(c for _, c in on)
    us = 1e6
    print(f"capture path, {args.channels} numeric channels + control, events, lifecycle; "
          f"{args.ticks} ticks in 0.5 s chunks, best of {args.repeat}; "
          f"GC policy: {'run' if gc_policy_enabled() else 'inherit'}")
    print(f"  Record off                  : {off_wall * us:8.2f} us/tick wall {off_cpu * us:8.2f} us/tick thread CPU")
    print(f"  Core capture, null consumer : {null_wall * us:8.2f} us/tick wall {null_cpu * us:8.2f} us/tick thread CPU")
    print(f"  Record on                   : {on_wall * us:8.2f} us/tick wall {on_cpu * us:8.2f} us/tick thread CPU")
    print(f"  added by Record on (CPU)    : {(on_cpu - off_cpu) * us:8.2f} us/tick, ratio {on_cpu / off_cpu:.1f}x")
    print(f"    of which Core's capture   : {(null_cpu - off_cpu) * us:8.2f} us/tick")
    print(f"    of which Record's pumps   : {(on_cpu - null_cpu) * us:8.2f} us/tick "
          f"({(on_cpu - null_cpu) * us / 5:.2f} us per envelope, 5 envelopes/tick)")
    print(f"  added wall incl. GIL waits  : {(on_wall - off_wall) * us:8.2f} us/tick, ratio {on_wall / off_wall:.1f}x")
    print(f"  lost or failed envelopes    : {lost}")
    figures = Figures("bench_capture")
    figures.add("off_cpu_us_per_tick", off_cpu * us)
    figures.add("on_cpu_us_per_tick", on_cpu * us)
    figures.add("added_cpu_us_per_tick", (on_cpu - off_cpu) * us)
    figures.add("pumps_cpu_us_per_envelope", (on_cpu - null_cpu) * us / 5)
    figures.add("added_wall_us_per_tick", (on_wall - off_wall) * us)
    figures.add("lost", lost, 0, "<=")
    figures.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
