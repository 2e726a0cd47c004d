"""Cross-backend Replay: a MuJoCo recording drawn again by moderngl, with no physics engine.

The bounds (issue 29, README "Cross-backend Replay"): on every frame of the main job's
three cameras over 30 ticks, and of the shapes scene, the foreground-mask IoU against
MuJoCo is >= 0.95 and the depth median |difference| within both masks is <= 1 cm.  The
moving bodies' own masks (the arm, gripper and objects; the room fills the DROID views,
so the foreground alone is nearly the whole frame) are held to IoU >= 0.95 too.  The
worst frame pair is saved as ``worst-<scene>.png`` in the test's output folder.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("mujoco")
pytest.importorskip("moderngl")

from tests.host.render.cross_support import compare, paired_frames, side_by_side

from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.cli import main as fsr_main
from fastsim_recording_format import FsrReader
from fastsim_recording_format.codecs.geometry import decode_assets

pytestmark = pytest.mark.mujoco

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
DROID_CAMERAS = ("exterior_left", "exterior_right", "wrist")
IOU_MIN, DEPTH_MAX_M = 0.95, 0.01


def _write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def _record(run: Path, out: Path) -> Path:
    prepared = prepare_run(run)
    result = run_session(prepared, out)
    assert result.outcome.ok, result.outcome.reason
    return out / prepared.output_names[0]


@pytest.fixture(scope="module")
def droid_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's main job (examples/droid-like) for 2 s (30 ticks) with render.state and geometry."""
    root = tmp_path_factory.mktemp("droid-source")
    document = yaml.safe_load((EXAMPLES / "droid-like" / "run.yaml").read_text(encoding="utf-8"))
    document["runtime"]["duration_s"] = 2.0
    streams = document["plugins"]["record"]["config"]["streams"]
    streams["render_state"] = {"enabled": True, "rate_hz": 15}
    streams["geometry"] = {"enabled": True, "rate_hz": 15}
    return _record(_write(root / "source.yaml", document), root)


@pytest.fixture(scope="module")
def shapes_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/shapes/run.yaml: every shape kind, 2 s at 15 Hz."""
    return _record(EXAMPLES / "shapes" / "run.yaml", tmp_path_factory.mktemp("shapes-source"))


def _replay_run(tmp_path: Path, base: Path, **knobs: object) -> Path:
    document = yaml.safe_load(base.read_text(encoding="utf-8"))
    document["runtime"]["sensor_hz"] = 15
    if knobs:
        scene = document["scenario"]["scene"]
        scene.setdefault(document["backend"], {}).update(knobs)
    return _write(tmp_path / "replay.yaml", document)


def _check_every_frame(
    source: Path, run: Path, cameras: tuple[str, ...], png: Path, ticks: int = 30
) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = collections.defaultdict(list)
    worst = None
    frames = 0
    for pair in paired_frames(source, run, cameras):
        c = compare(pair)
        assert c["iou"] >= IOU_MIN, f"tick {pair.tick} {pair.camera}: IoU {c['iou']:.4f}"
        # stricter than the issue asks: the room fills the DROID views, so also the moving bodies alone
        assert c["moving_iou"] >= IOU_MIN, f"tick {pair.tick} {pair.camera}: moving-body IoU {c['moving_iou']:.4f}"
        assert c["depth_median_m"] <= DEPTH_MAX_M, f"tick {pair.tick} {pair.camera}: depth {c['depth_median_m']}"
        for key, value in c.items():
            figures[key].append(value)
        if worst is None or (c["moving_iou"], c["iou"]) < worst[1]:
            worst = (pair, (c["moving_iou"], c["iou"]))
        frames += 1
    assert worst is not None
    assert frames == ticks * len(cameras)
    side_by_side(worst[0], png)
    assert png.stat().st_size > 1000
    return figures


def test_main_job_three_cameras_30_ticks_within_bounds(droid_source: Path, tmp_path: Path) -> None:
    """Every frame of the DROID-like job's three cameras: IoU >= 0.95, depth median <= 1 cm; colour differs."""
    run = _replay_run(tmp_path, EXAMPLES / "render-replay" / "run.yaml")
    figures = _check_every_frame(droid_source, run, DROID_CAMERAS, tmp_path / "worst-droid.png")
    print(f"droid: IoU min {min(figures['iou']):.5f}, moving-body IoU min {min(figures['moving_iou']):.5f}, depth median max {max(figures['depth_median_m']) * 1e3:.4f} mm, "
          f"colour mean |diff| median {np.median(figures['colour_mean_abs']):.1f}/255")
    assert np.median(figures["colour_mean_abs"]) > 0  # false colours: the recording has no materials


def test_shapes_scene_has_every_shape_kind_and_stays_within_bounds(shapes_source: Path, tmp_path: Path) -> None:
    """The second scene carries plane, sphere, capsule, ellipsoid, cylinder, box and mesh; bounds hold on every frame."""
    with FsrReader(shapes_source) as reader:
        first = next(r for r in reader.records("geometry") if r.kind.name == "DATA")
        shapes = {item["shape"] for item in decode_assets(first.payload).manifest["items"]}
    assert shapes == {"plane", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh"}
    run = _replay_run(tmp_path, EXAMPLES / "shapes-replay" / "run.yaml")
    _check_every_frame(shapes_source, run, ("front", "top"), tmp_path / "worst-shapes.png")


def test_recorded_fluid_particles_are_drawn_by_both(tmp_path: Path) -> None:
    """A fluid Run's recorded particles are drawn as spheres by moderngl too: bounds hold with them as moving bodies."""
    document = yaml.safe_load((EXAMPLES / "droid-like" / "run.yaml").read_text(encoding="utf-8"))
    document["runtime"]["duration_s"] = 0.6
    document["scenario"]["scene"]["fluid"] = {"name": "water", "rate_per_tick": 20}
    document["scenario"]["scene"]["mujoco"].update(width=160, height=120)
    streams = document["plugins"]["record"]["config"]["streams"]
    streams.update(render_state={"enabled": True, "rate_hz": 15}, geometry={"enabled": True, "rate_hz": 15})
    source = _record(_write(tmp_path / "fluid.yaml", document), tmp_path)
    run = _replay_run(tmp_path, EXAMPLES / "render-replay" / "run.yaml", width=160, height=120)
    figures = _check_every_frame(source, run, DROID_CAMERAS, tmp_path / "worst-fluid.png", ticks=9)
    assert min(figures["moving_iou"]) < 1.0  # the particles are in the moving masks


def test_a_resolution_never_recorded_lines_up(shapes_source: Path, tmp_path: Path) -> None:
    """Cameras recorded at 320x240, replayed at 256x256: both renderers use the same K, within bounds."""
    run = _replay_run(tmp_path, EXAMPLES / "shapes-replay" / "run.yaml", width=256, height=256)
    pairs = list(paired_frames(shapes_source, run, ("front",)))
    assert {p.gl_rgb.shape for p in pairs} == {(256, 256, 3)}
    for pair in pairs:
        c = compare(pair)
        assert c["iou"] >= IOU_MIN, (pair.tick, c)
        assert c["depth_median_m"] <= DEPTH_MAX_M, (pair.tick, c)


def test_viewpoints_never_recorded_line_up(droid_source: Path, tmp_path: Path) -> None:
    """extra_cameras: a world-fixed look-at camera and one mounted on the moving hand, 400x300, within bounds."""
    extra = {
        "overhead": {"pos": [0.9, -0.6, 1.1], "target": [0.4, 0.0, 0.1], "fovy": 50},
        "hand_side": {"body": "hand", "pos": [0.25, 0.0, 0.05], "quat_xyzw": [0.5, 0.5, 0.5, 0.5], "fovy": 70},
    }
    run = _replay_run(tmp_path, EXAMPLES / "render-replay" / "run.yaml", width=400, height=300,
                      cameras=[], extra_cameras=extra)
    document = yaml.safe_load(run.read_text(encoding="utf-8"))
    document["plugins"]["record"]["config"]["streams"]["cameras"] = {}
    _write(run, document)
    figures = _check_every_frame(droid_source, run, ("overhead", "hand_side"), tmp_path / "worst-extra.png")
    assert min(figures["moving_iou"]) < 1.0  # the arm is in view, and matched


def test_cli_both_renderers_then_rerun_has_both_frames_for_each_tick(
    droid_source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """fsr replay --renderer mujoco|moderngl each commit an FSR naming its renderer; fsr export --to rerun reads both."""
    rr = pytest.importorskip("rerun")
    outputs = {}
    for renderer in ("mujoco", "moderngl"):
        document = yaml.safe_load((EXAMPLES / "render-replay" / "run.yaml").read_text(encoding="utf-8"))
        document["plugins"]["record"]["config"]["output"]["name"] = f"replay-{renderer}.fsr"
        run = _write(tmp_path / f"{renderer}.yaml", document)
        code = fsr_main(["replay", str(droid_source), str(run), "--output-dir", str(tmp_path), "--renderer", renderer])
        assert code == 0, capsys.readouterr().err
        assert f"renderer {renderer}" in capsys.readouterr().out
        outputs[renderer] = tmp_path / f"replay-{renderer}.fsr"
        with FsrReader(outputs[renderer]) as reader:
            drawn_by = reader.run.attributes["scene"]["backend"]["renderer"]["renderer"]
            assert drawn_by == renderer
            assert reader.stream("cameras.wrist.rgb") is not None
    assert fsr_main(["export", *map(str, outputs.values()), "--to", "rerun", "-o", str(tmp_path / "rrd"),
                     "--quiet", "--jobs", "1"]) == 0
    ticks: dict[str, dict[str, set[int]]] = {}
    for index, renderer in enumerate(outputs):
        per_camera: dict[str, set[int]] = collections.defaultdict(set)
        for chunk in rr.chunk.RrdReader(str(tmp_path / "rrd" / f"{index:04d}-replay-{renderer}.rrd")).stream().to_chunks():
            path = chunk.entity_path
            if path.startswith("/world/cameras/") and path.endswith("/image") and not chunk.is_static:
                batch = chunk.to_record_batch()
                column = next(c for c in batch.schema.names if c.endswith("tick"))
                per_camera[path.split("/")[3]].update(int(t) for t in batch.column(column).to_pylist())
        ticks[renderer] = per_camera
    for cam in DROID_CAMERAS:
        assert len(ticks["mujoco"][cam]) == 30
        assert ticks["mujoco"][cam] == ticks["moderngl"][cam]
