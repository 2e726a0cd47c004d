"""Simulation-thread cost per tick of render.state capture at 30 Hz, against disabled.

Both Runs are the same DROID-like MuJoCo scene on the embedded host at 120 Hz (physics
stepped every tick, no cameras, observations off, Record selected), for ``--seconds``
simulated seconds.  The only difference is ``streams.render_state``: ``{enabled: true,
rate_hz: 30}`` against the default (disabled).

Fair comparison: the headline Runs are uninstrumented and identical except for that
one setting.  Both get the same host-work callback, which stamps every tick on the
simulation thread with ``perf_counter`` (wall) and ``thread_time`` (this thread's CPU);
disabled and enabled Runs alternate ``--repeat`` times and the median of each is
reported, so background load on a shared machine hits both alike.  Printed:

* wall and simulation-thread CPU microseconds per tick, per configuration;
* the microseconds per tick render.state adds (wall and CPU) and the on/off ratios.
  CPU is the simulation thread's own work (state sampling, stamping, Record's pump);
  wall additionally contains the time this thread waits for the GIL while the writer
  worker encodes (zlib level 1) on its own thread;
* from one extra instrumented enabled Run: the time inside the render-side capture call
  (``RenderCapture.after_step``) per tick and per sample, as thread CPU and as wall;
* isolated: the scene stepped on this thread alone (no Record, no worker), with and
  without the capture call, alternating passes: the capture work itself, free of the
  GIL and cache contention a busy 2-core machine adds to the in-Run figures.

Run: ``MUJOCO_GL=egl python benchmarks/bench_render_state.py``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import yaml
from _report import Figures, add_json_flag

from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.render import capture as render_capture
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session


def _run_file(root: Path, enabled: bool) -> Path:
    streams: dict[str, object] = {"observations": {"mode": "none", "include": {}}}
    if enabled:
        streams["render_state"] = {"enabled": True, "rate_hz": 30}
    document = {
        "schema": "fastsim/2",
        "name": "bench-render-state",
        "backend": "mujoco",
        "scenario": {"scene": {
            "robots": {"robot": {"use": "robot://droid/panda-2f85"}},
            "mujoco": {"cameras": [], "reset_every_s": None},
        }},
        "runtime": {"sensor_hz": 120, "rate_policy": "exact"},
        "plugins": {"record": {"use": "plugin://fastsim/record",
                               "config": {"output": {"name": "bench.fsr"}, "streams": streams}}},
    }
    path = root / ("enabled.yaml" if enabled else "disabled.yaml")
    path.write_text(yaml.safe_dump(document))
    return path


class CaptureTimer:
    """Accumulates wall and thread-CPU time inside ``RenderCapture.after_step``."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.samples = 0
        original = render_capture.RenderCapture.after_step
        timer = self

        def timed(capture: render_capture.RenderCapture, dt_s: float) -> None:
            wall, cpu = time.perf_counter(), time.thread_time()
            original(capture, dt_s)
            timer.cpu += time.thread_time() - cpu
            timer.wall += time.perf_counter() - wall
            timer.samples = capture.counts["state_samples"]

        setattr(render_capture.RenderCapture, "after_step", timed)  # noqa: B010
        self._original = original

    def restore(self) -> None:
        """Put the original method back."""
        setattr(render_capture.RenderCapture, "after_step", self._original)  # noqa: B010


def measure(enabled: bool, seconds: float) -> tuple[float, float, int]:
    """(wall s/tick, simulation-thread CPU s/tick, ticks) of one uninstrumented Run."""
    with tempfile.TemporaryDirectory(prefix="fsr-bench-rs-") as tmp:
        root = Path(tmp)
        prepared = prepare_run(_run_file(root, enabled), duration_s=seconds)
        stamps: list[tuple[float, float]] = []

        def work(_tick: int) -> None:
            stamps.append((time.perf_counter(), time.thread_time()))

        result = run_session(prepared, root / "out", host_work=work)
        if not result.outcome.ok:
            raise SystemExit(f"run failed: {result.outcome.reason}")
        ticks = len(stamps) - 1
        return (stamps[-1][0] - stamps[0][0]) / ticks, (stamps[-1][1] - stamps[0][1]) / ticks, ticks + 1


def capture_call(seconds: float) -> tuple[float, float, int, int]:
    """(wall s, thread-CPU s, samples, ticks) inside the capture call of one enabled Run."""
    timer = CaptureTimer()
    try:
        _, _, ticks = measure(True, seconds)
    finally:
        timer.restore()
    return timer.wall, timer.cpu, timer.samples, ticks


def isolated(seconds: float, repeat: int) -> tuple[float, float, float, int]:
    """(step CPU s/tick off, step CPU s/tick on, capture-call CPU s/tick, samples per pass).

    No Record and no worker thread: the same scene is stepped on this thread, and the
    enabled passes also run the render-side capture (sampling, stamping, publishing to a
    no-op subscriber).  Off and on passes alternate; medians are kept.  The capture call
    is timed directly, so its figure is the capture work itself, free of the GIL and
    cache contention a busy 2-core machine adds to the in-Run figures.
    """
    with tempfile.TemporaryDirectory(prefix="fsr-bench-rs-") as tmp:
        prepared = prepare_run(_run_file(Path(tmp), True), duration_s=seconds)
        host = EmbeddedHost.create(capture=prepared.capture, output_dir=Path(tmp), sensor_hz=120.0)
        host.bus.subscribe("render.state", lambda _envelope: None)
        host.bus.close_history()
        backend = prepared.backend
        capture = render_capture.RenderCapture.build(host, backend)
        assert capture is not None
        ticks = round(seconds * 120)
        steps: dict[bool, list[float]] = {False: [], True: []}
        calls: list[float] = []
        tick = 0
        clock = time.thread_time
        for _ in range(repeat):
            for enabled in (False, True):
                step_s = call_s = 0.0
                before = capture.counts["state_samples"]
                for _ in range(ticks):
                    tick += 1
                    host.advance(tick, round(tick * 1e9 / 120))
                    start = clock()
                    backend.step(prepared.substeps)
                    step_s += clock() - start
                    if enabled:
                        start = clock()
                        capture.after_step(1 / 120)
                        call_s += clock() - start
                steps[enabled].append(step_s / ticks)
                if enabled:
                    calls.append(call_s / ticks)
                    samples = capture.counts["state_samples"] - before
        backend.close()
        return (statistics.median(steps[False]), statistics.median(steps[True]),
                statistics.median(calls), samples)


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="simulated seconds per Run")
    parser.add_argument("--repeat", type=int, default=5)
    add_json_flag(parser)
    args = parser.parse_args()
    runs: dict[bool, list[tuple[float, float, int]]] = {False: [], True: []}
    for _ in range(args.repeat):
        for enabled in (False, True):
            runs[enabled].append(measure(enabled, args.seconds))
    med = {
        enabled: (statistics.median(f[0] for f in figures), statistics.median(f[1] for f in figures))
        for enabled, figures in runs.items()
    }
    for enabled in (False, True):
        wall, cpu = med[enabled]
        label = "render_state 30 Hz" if enabled else "render_state off  "
        print(f"{label}: {wall * 1e6:8.1f} us/tick wall, {cpu * 1e6:8.1f} us/tick sim-thread CPU "
              f"(median of {args.repeat}, {runs[enabled][0][2]} ticks)")
    (off_wall, off_cpu), (on_wall, on_cpu) = med[False], med[True]
    print(f"added by render.state at 30 Hz: {(on_cpu - off_cpu) * 1e6:+.1f} us/tick sim-thread CPU "
          f"(ratio {on_cpu / off_cpu:.3f}), {(on_wall - off_wall) * 1e6:+.1f} us/tick wall "
          f"(ratio {on_wall / off_wall:.3f})")
    wall, cpu, samples, ticks = capture_call(args.seconds)
    print(f"capture call (sample + stamp + pump), one instrumented Run: {cpu / ticks * 1e6:.2f} us/tick "
          f"= {cpu / max(1, samples) * 1e6:.1f} us/sample thread CPU; {wall / ticks * 1e6:.2f} us/tick "
          f"wall incl. GIL waits ({samples} samples in {ticks} ticks); disabled: no capture object")
    off, on, call, samples = isolated(min(args.seconds, 10.0), args.repeat)
    ticks = round(min(args.seconds, 10.0) * 120)
    print(f"isolated (this thread only, no Record worker): capture call {call * 1e6:.2f} us/tick "
          f"= {call * ticks / samples * 1e6:.1f} us/sample; MuJoCo step {off * 1e6:.1f} us/tick off, "
          f"{on * 1e6:.1f} on; (step + capture) / step = {(on + call) / off:.3f}")
    figures = Figures("bench_render_state")
    figures.add("sim_cpu_ratio_on_over_off", on_cpu / off_cpu)
    figures.add("added_sim_cpu_us_per_tick", (on_cpu - off_cpu) * 1e6)
    figures.add("isolated_step_plus_capture_over_step", (on + call) / off)
    figures.emit(args.json)

if __name__ == "__main__":
    main()
