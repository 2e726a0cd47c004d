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
  (``RenderCapture.after_step``) per tick and per sample, as thread CPU and as wall.

Run: ``MUJOCO_GL=egl python benchmarks/bench_render_state.py``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from fastsim_embedded import render_capture
from fastsim_embedded.compile import prepare_run
from fastsim_embedded.session import run_session


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


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="simulated seconds per Run")
    parser.add_argument("--repeat", type=int, default=5)
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


if __name__ == "__main__":
    main()
