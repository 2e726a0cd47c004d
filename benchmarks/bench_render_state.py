"""Simulation-thread cost per tick of render.state capture at 30 Hz, against disabled.

Both Runs are the same DROID-like MuJoCo scene on the embedded host at 120 Hz (physics
stepped every tick, no cameras, observations off, Record selected), for ``--seconds``
simulated seconds.  The only difference is ``streams.render_state``: ``{enabled: true,
rate_hz: 30}`` against the default (disabled).  A host-work callback stamps every tick
on the simulation thread, so the per-tick figures include MuJoCo stepping, Core's
publication and Record's pump, and whatever the writer worker (zlib level 1 on its own
thread) costs this thread through the GIL.

Printed per configuration (median of ``--repeat`` interleaved Runs, so background load
hits both alike): wall and thread-CPU microseconds per tick; then the microseconds
render.state adds per tick and per sample, and the ratio.  The time spent inside the
render-side capture call itself (state sampling, stamping, Record's pump) is measured
directly and is the least noisy figure on a shared machine.
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
    """Accumulates the time spent inside ``RenderCapture.after_step`` (this thread)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        original = render_capture.RenderCapture.after_step
        timer = self

        def timed(capture: render_capture.RenderCapture, dt_s: float) -> None:
            start = time.perf_counter()
            original(capture, dt_s)
            timer.seconds += time.perf_counter() - start
            timer.calls += 1

        setattr(render_capture.RenderCapture, "after_step", timed)  # noqa: B010
        self._original = original

    def restore(self) -> None:
        """Put the original method back."""
        setattr(render_capture.RenderCapture, "after_step", self._original)  # noqa: B010


def measure(enabled: bool, seconds: float) -> tuple[float, float, int, float]:
    """(wall s/tick, CPU s/tick, render.state samples, capture s/tick) of one Run."""
    with tempfile.TemporaryDirectory(prefix="fsr-bench-rs-") as tmp:
        root = Path(tmp)
        prepared = prepare_run(_run_file(root, enabled), duration_s=seconds)
        stamps: list[tuple[float, float]] = []

        def work(_tick: int) -> None:
            stamps.append((time.perf_counter(), time.thread_time()))

        timer = CaptureTimer()
        try:
            result = run_session(prepared, root / "out", host_work=work)
        finally:
            timer.restore()
        if not result.outcome.ok:
            raise SystemExit(f"run failed: {result.outcome.reason}")
        samples = 0
        for finalizer in result.outcome.finalizers:
            samples = int(str(finalizer.result.summary.get("records", 0)))
        ticks = len(stamps) - 1
        wall = (stamps[-1][0] - stamps[0][0]) / ticks
        cpu = (stamps[-1][1] - stamps[0][1]) / ticks
        return wall, cpu, samples, timer.seconds / max(1, len(stamps))


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="simulated seconds per Run")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    runs: dict[bool, list[tuple[float, float, int, float]]] = {False: [], True: []}
    for _ in range(args.repeat):
        for enabled in (False, True):
            runs[enabled].append(measure(enabled, args.seconds))
    best: dict[bool, tuple[float, float, int, float]] = {}
    for enabled, figures in runs.items():
        best[enabled] = (
            statistics.median(f[0] for f in figures), statistics.median(f[1] for f in figures),
            figures[0][2], statistics.median(f[3] for f in figures),
        )
    ticks = round(args.seconds * 120)
    for enabled in (False, True):
        wall, cpu, records, capture = best[enabled]
        label = "render_state 30 Hz" if enabled else "render_state off  "
        print(f"{label}: {wall * 1e6:8.1f} us/tick wall, {cpu * 1e6:8.1f} us/tick CPU, "
              f"{records} records, capture call {capture * 1e6:6.2f} us/tick")
    off, on = best[False], best[True]
    samples = round(args.seconds * 30) + 1
    added = on[0] - off[0]
    print(f"added by render.state: {added * 1e6:+.1f} us/tick wall, {(on[1] - off[1]) * 1e6:+.1f} us/tick CPU "
          f"({ticks} ticks, ~{samples} samples: {added * ticks / samples * 1e6:+.1f} us/sample); "
          f"ratio on/off {on[0] / off[0]:.3f} wall, {on[1] / off[1]:.3f} CPU")
    print(f"capture call alone (sample + stamp + pump, this thread): {on[3] * 1e6:.2f} us/tick "
          f"= {on[3] * ticks / samples * 1e6:.1f} us/sample; off: no capture object "
          f"({off[3] * 1e6:.2f} us/tick)")


if __name__ == "__main__":
    main()
