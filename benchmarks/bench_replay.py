"""Replay frames/s and CPU ms per frame: moderngl against MuJoCo's default and fast presets.

One source is recorded once: the README's main job (examples/droid-like: three cameras,
render.state and geometry at 15 Hz) for ``--seconds``.  Then every recorded tick is
posed and its three cameras drawn at ``--width`` x ``--height`` (default 640 x 480, the
issue's figure) through ``prepare_replay`` (the code ``fsr replay`` runs, without the
Record writer), by three renderers:

* ``mujoco_default``: MuJoCo's own defaults (4x MSAA ``offsamples=4``, 4096 shadow map,
  every light casting shadows);
* ``mujoco_fast``: the scene as shipped (``offsamples=0``, ``shadowsize=0``, no shadows);
* ``moderngl``: the recorded geometry drawn with no physics engine (``--renderer
  moderngl``).

Fair comparison: the same ticks, cameras and size for all three, in one process; the
passes are interleaved (default, fast, moderngl, default, ...) ``--repeat`` times and the
median of each is reported, so background load hits all alike.  CPU is the process's
CPU time (``time.process_time``: llvmpipe's rasterizer threads included), divided by the
frames drawn; frames/s is wall time.  Posing (render.state decoding, ``mj_forward`` or
the recorded transforms) is included, as it is in a Replay.

Run: ``MUJOCO_GL=egl python benchmarks/bench_replay.py [--json]``.  The JSON line is
``_report``'s: ``moderngl_cpu_ratio_vs_fast`` carries the target (``<= 1.0``) and decides
``passed``; the size, frames per pass and repeat are top-level keys.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _report import Figures, add_json_flag

from fastsim_embedded.render.replay import prepare_replay
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("mujoco_default", "mujoco_fast", "moderngl")
TARGET_CPU_RATIO_VS_FAST = 1.0  # moderngl must cost no more CPU per frame than MuJoCo's fast preset


def record_source(root: Path, seconds: float) -> Path:
    """The main job with render.state and geometry (cameras at the example's 320 x 240)."""
    document = yaml.safe_load((ROOT / "examples" / "droid-like" / "run.yaml").read_text(encoding="utf-8"))
    document["runtime"]["duration_s"] = seconds
    streams = document["plugins"]["record"]["config"]["streams"]
    streams["render_state"] = {"enabled": True, "rate_hz": 15}
    streams["geometry"] = {"enabled": True, "rate_hz": 15}
    run = root / "source.yaml"
    run.write_text(yaml.safe_dump(document), encoding="utf-8")
    result = run_session(prepare_run(run), root)
    if not result.outcome.ok:
        raise SystemExit(f"recording the source failed: {result.outcome.reason}")
    return root / "episode.fsr"


def replay_run(root: Path, width: int, height: int) -> Path:
    """examples/render-replay at ``width`` x ``height`` and the source's rate."""
    document = yaml.safe_load((ROOT / "examples" / "render-replay" / "run.yaml").read_text(encoding="utf-8"))
    document["runtime"]["sensor_hz"] = 15
    document["scenario"]["scene"]["mujoco"].update({"width": width, "height": height})
    run = root / "replay.yaml"
    run.write_text(yaml.safe_dump(document), encoding="utf-8")
    return run


def _preset(backend: Any, config: str) -> None:
    if config != "mujoco_default":
        return
    model = backend.inner.scene.model  # set before the first render: the renderer reads them once
    model.vis.quality.offsamples = 4
    model.vis.quality.shadowsize = 4096
    model.light_castshadow[:] = 1


def one_pass(source: Path, run: Path, config: str) -> tuple[float, float, int]:
    """(wall s, CPU s, frames) for drawing every tick's cameras once."""
    renderer = "moderngl" if config == "moderngl" else "mujoco"
    _, backend, track = prepare_replay(source, run, renderer=renderer)
    try:
        _preset(backend, config)
        backend.script(1)
        backend.step(1)
        backend.sample_cameras()  # contexts, uploads and shadow maps made before timing
        frames = 0
        wall, cpu = time.perf_counter(), time.process_time()
        for tick in range(1, len(track.records) + 1):
            backend.script(tick)
            backend.step(1)
            frames += sum(1 for r in backend.sample_cameras() if r.role == "rgb")
        return time.perf_counter() - wall, time.process_time() - cpu, frames
    finally:
        backend.close()


def main() -> None:
    """Print the figures (and, with --json, one JSON line last)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="recorded seconds (15 ticks each)")
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--repeat", type=int, default=3)
    add_json_flag(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = record_source(root, args.seconds)
        run = replay_run(root, args.width, args.height)
        passes: dict[str, list[tuple[float, float, int]]] = {c: [] for c in CONFIGS}
        for _ in range(args.repeat):
            for config in CONFIGS:
                passes[config].append(one_pass(source, run, config))
    figures: dict[str, float] = {}
    frames = passes["moderngl"][0][2]
    for config in CONFIGS:
        fps = statistics.median(n / wall for wall, _, n in passes[config])
        cpu_ms = statistics.median(cpu / n * 1e3 for _, cpu, n in passes[config])
        figures[f"{config}_fps"], figures[f"{config}_cpu_ms_per_frame"] = round(fps, 2), round(cpu_ms, 2)
        print(f"{config:15s}: {fps:7.1f} frames/s, {cpu_ms:7.2f} CPU ms/frame "
              f"({args.width}x{args.height}, {frames} frames a pass, median of {args.repeat})")
    for base in ("mujoco_default", "mujoco_fast"):
        cpu = figures["moderngl_cpu_ms_per_frame"] / figures[f"{base}_cpu_ms_per_frame"]
        fps = figures["moderngl_fps"] / figures[f"{base}_fps"]
        figures[f"moderngl_cpu_ratio_vs_{base.removeprefix('mujoco_')}"] = round(cpu, 3)
        figures[f"moderngl_fps_ratio_vs_{base.removeprefix('mujoco_')}"] = round(fps, 3)
        print(f"moderngl / {base}: CPU per frame x{cpu:.3f}, frames/s x{fps:.2f}")
    ok = figures["moderngl_cpu_ratio_vs_fast"] <= TARGET_CPU_RATIO_VS_FAST
    print(f"target: moderngl CPU per frame <= MuJoCo fast preset's: {'met' if ok else 'MISSED'}")
    report = Figures("bench_replay")
    for name, value in figures.items():
        gated = name == "moderngl_cpu_ratio_vs_fast"
        report.add(name, value, TARGET_CPU_RATIO_VS_FAST if gated else None, "<=" if gated else None)
    report.extra.update(width=args.width, height=args.height, frames_per_pass=frames, repeat=args.repeat)
    report.emit(args.json)


if __name__ == "__main__":
    main()
