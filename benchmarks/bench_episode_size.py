"""File size of a 60-s DROID-like episode: render.state without cameras vs three JPEG cameras.

Both Runs are ``examples/droid-like/run.yaml`` (the DROID-like MuJoCo pick at 15 Hz, a
reset every 4 s, joint position and velocity observed, 320x240 cameras) for
``--seconds`` simulated seconds:

* ``render-state``: no cameras, ``render_state: {enabled: true, rate_hz: 15}`` (one
  sample per tick, so a later Replay can render every camera frame again);
* ``cameras``: the example as shipped, three JPEG quality-92 cameras, no render state.

Prints each committed file's size, its render.state / camera payload bytes, the bytes
per simulated second, and the size ratio, measured in this one process.
Run: ``MUJOCO_GL=egl python benchmarks/bench_episode_size.py``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _report import Figures, add_json_flag

from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_recording_format import FsrReader

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "droid-like" / "run.yaml"


def _variant(root: Path, render_state: bool) -> Path:
    document: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    streams = document["plugins"]["record"]["config"]["streams"]
    if render_state:
        streams["cameras"] = {}
        streams["render_state"] = {"enabled": True, "rate_hz": 15}
        document["scenario"]["scene"]["mujoco"]["cameras"] = []
    path = root / ("render_state.yaml" if render_state else "cameras.yaml")
    path.write_text(yaml.safe_dump(document))
    return path


def measure(render_state: bool, seconds: float) -> tuple[int, dict[str, int], float]:
    """(file bytes, payload bytes by stream family, wall seconds) of one Run."""
    with tempfile.TemporaryDirectory(prefix="fsr-bench-size-") as tmp:
        root = Path(tmp)
        prepared = prepare_run(_variant(root, render_state), duration_s=seconds)
        started = time.perf_counter()
        result = run_session(prepared, root / "out")
        elapsed = time.perf_counter() - started
        if not result.outcome.ok or not result.outcome.committed:
            raise SystemExit(f"run failed: {result.outcome.reason}")
        path = result.outcome.committed[0]
        families: dict[str, int] = {}
        with FsrReader(path) as reader:
            for stream in reader.footer["streams"]:
                name = reader.stream(int(stream["stream_id"])).name
                family = "cameras" if name.startswith("cameras.") else name
                families[family] = families.get(family, 0) + int(stream["payload_bytes"])
            size = reader.size
        return size, families, elapsed


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="simulated seconds")
    add_json_flag(parser)
    args = parser.parse_args()
    rows = {}
    for render_state in (True, False):
        rows[render_state] = measure(render_state, args.seconds)
    for render_state, (size, families, elapsed) in rows.items():
        label = "render.state, no cameras" if render_state else "3 JPEG cameras (q92 4:4:4)"
        detail = ", ".join(f"{k} {v / 1024:.1f} KiB" for k, v in sorted(families.items()) if v)
        print(f"{label:28s}: {size / 1024:10.1f} KiB file, {size / args.seconds / 1024:8.1f} KiB/s "
              f"(wall {elapsed:.1f} s; payloads: {detail})")
    state, cams = rows[True][0], rows[False][0]
    print(f"{args.seconds:g}-s episode: render.state file is {state / cams:.4f} of the camera file "
          f"({cams / state:.1f}x smaller)")
    figures = Figures("bench_episode_size")
    figures.add("render_state_file_kib_per_s", state / args.seconds / 1024)
    figures.add("camera_file_kib_per_s", cams / args.seconds / 1024)
    figures.add("render_state_over_cameras", state / cams)
    figures.emit(args.json)


if __name__ == "__main__":
    main()
