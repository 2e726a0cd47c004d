"""Bad input to ``fsr replay --renderer moderngl``: one line each, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mujoco")

from fastsim_embedded.backends.gl_replay.scene import RecordedScene, SceneRefused
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.cli import main as fsr_main
from fastsim_recording_format import FsrReader
from fastsim_recording_format.codecs.geometry import DecodedAssets
from fastsim_recording_format.codecs.render_state import RenderState, decode_render_state

pytestmark = pytest.mark.mujoco

_RUN = """schema: fastsim/2
name: {name}
backend: mujoco
scenario:
  scene:
    robots: {{robot: {{use: robot://droid/panda-2f85}}}}
    mujoco: {{width: 64, height: 48, cameras: [exterior_left]}}
runtime: {{sensor_hz: 15, rate_policy: exact, duration_s: 0.4}}
plugins:
  record:
    use: plugin://fastsim/record
    config:
      output: {{name: {name}.fsr}}
      streams:
        observations: {{mode: none, include: {{}}}}
        cameras:
          exterior_left:
            rgb: sensors.exterior_left.camera.rgb
            intrinsics: sensors.exterior_left.camera.intrinsics
            translation: sensors.exterior_left.camera.extrinsics.translation
            quaternion_xyzw: sensors.exterior_left.camera.extrinsics.quaternion_xyzw
            required: true
            every_n_samples: 1
{streams}
"""


def _source(root: Path, name: str, streams: str) -> Path:
    run = root / f"{name}.yaml"
    run.write_text(_RUN.format(name=name, streams=streams), encoding="utf-8")
    assert run_session(prepare_run(run), root).outcome.ok
    return root / f"{name}.fsr"


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("refusal")
    return {
        "both": _source(root, "both", "        render_state: {enabled: true, rate_hz: 15}\n"
                                      "        geometry: {enabled: true, rate_hz: 15}"),
        "no_geometry": _source(root, "no_geometry", "        render_state: {enabled: true, rate_hz: 15}"),
        "no_state": _source(root, "no_state", "        geometry: {enabled: true, rate_hz: 15}"),
        "replay": _replay_run(root),
    }


def _replay_run(root: Path) -> Path:
    run = root / "replay.yaml"
    run.write_text(_RUN.format(name="out", streams=""), encoding="utf-8")
    return run


def _replay(sources: dict[str, Path], source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = fsr_main(["replay", str(sources[source]), str(sources["replay"]), "--output-dir", str(tmp_path),
                     "--renderer", "moderngl"])
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    return code, err


def test_a_recording_without_geometry_is_one_line_naming_the_stream(
    sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A source without the geometry stream: exit 2, one line naming 'geometry', nothing written."""
    code, err = _replay(sources, "no_geometry", tmp_path, capsys)
    assert code == 2
    assert len(err) == 1
    assert "'geometry' stream" in err[0]
    assert not list(tmp_path.iterdir())


def test_a_recording_without_render_state_is_one_line_naming_the_stream(
    sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A source without render.state: exit 2, one line naming 'render.state'."""
    code, err = _replay(sources, "no_state", tmp_path, capsys)
    assert code == 2
    assert len(err) == 1
    assert "'render.state' stream" in err[0]


def test_a_missing_gl_extra_is_one_line(
    sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without moderngl installed, --renderer moderngl is one line naming the [gl] extra, exit 2."""
    monkeypatch.setitem(sys.modules, "moderngl", None)  # import moderngl raises ImportError
    code, err = _replay(sources, "both", tmp_path, capsys)
    assert code == 2
    assert len(err) == 1
    assert "[gl] extra" in err[0]


def test_an_unknown_renderer_is_one_line(sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown --renderer is one line listing the known ones, exit 2."""
    code = fsr_main(["replay", str(sources["both"]), str(sources["replay"]), "--output-dir", str(tmp_path),
                     "--renderer", "vulkan"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert "unknown renderer 'vulkan'" in err[0]


def test_a_non_finite_pose_is_refused_naming_the_tick(
    sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NaN in tick 3's render.state: exit 1, one line naming the tick and key, no output file."""
    pytest.importorskip("moderngl")
    real = decode_render_state
    calls = {"n": 0}

    def poisoned(payload: Any) -> RenderState:
        state = real(payload)
        calls["n"] += 1
        if calls["n"] == 4:  # one decode at start-up (check_state), then ticks 1, 2, 3
            arrays = dict(state.arrays)
            arrays["articulation/robot/joint_position"] = np.full_like(arrays["articulation/robot/joint_position"], np.nan)
            return RenderState(arrays=arrays)
        return state

    monkeypatch.setattr("fastsim_embedded.render.replay.decode_render_state", poisoned)
    code, err = _replay(sources, "both", tmp_path, capsys)
    assert code == 1
    assert len(err) == 1
    assert "tick 3 (generation 0, sim time 0.200 s)" in err[0]
    assert "not finite" in err[0]
    assert not (tmp_path / "out.fsr").exists()


def _scene(sources: dict[str, Path]) -> RecordedScene:
    path = sources["both"]
    return RecordedScene.read(path, FsrReader(path))


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({"shape": "mesh", "size": [], "resource": "sha256:00"}, "mesh resource 'sha256:00' is not stored"),
        ({"shape": "hfield", "size": [1, 1, 1]}, "shape 'hfield' is not one of"),
        ({"shape": "box", "size": [0.1, float("nan"), 0.1]}, "needs 3 finite non-negative values"),
        ({"shape": "sphere", "size": [0.0]}, "has a zero extent"),
    ],
)
def test_an_undrawable_item_is_one_line_naming_it_and_its_body(
    sources: dict[str, Path], item: dict[str, Any], reason: str
) -> None:
    """An item moderngl cannot draw (missing mesh, unknown shape, bad size) is one line naming it and its body."""
    scene = _scene(sources)
    manifest = {"bodies": [{"name": "hand", "motion": "dynamic", "pose": [0, 0, 0, 0, 0, 0, 1]}],
                "items": [{"name": "finger", "body": "hand", "local_pose": [0, 0, 0, 0, 0, 0, 1], **item}],
                "resources": []}
    with pytest.raises(SceneRefused, match="item 'finger' on body 'hand' cannot be drawn") as caught:
        scene._assets(DecodedAssets(manifest=manifest, blobs={}), "geometry record 1")
    assert reason in str(caught.value)
    assert "\n" not in str(caught.value)
    scene.reader.close()


def test_a_non_finite_transform_is_refused_naming_the_tick(sources: dict[str, Path]) -> None:
    """A non-finite rigid pose at a tick is refused naming that tick."""
    scene = _scene(sources)
    record = scene.reader.records("render.state").__iter__().__next__()
    with pytest.raises(SceneRefused, match=r"tick 7 \(generation 0.*render.state 'rigid/cube/pose'.*not finite"):
        scene.pose(7, record, {"rigid/cube/pose": np.array([0, 0, np.inf, 0, 0, 0, 1.0])})
    scene.reader.close()


def test_a_particle_is_a_sphere_where_the_camera_model_puts_it() -> None:
    """One particle 1 m in front of a camera lands on the pixel K gives, at 1 m minus its radius."""
    pytest.importorskip("moderngl")
    from fastsim_embedded.backends.gl_replay.camera import view
    from fastsim_embedded.backends.gl_replay.gl import GlRenderer, Particles

    renderer = GlRenderer()
    try:
        k = np.array([[100.0, 0, 40.0], [0, 100.0, 20.0], [0, 0, 1]])
        identity = np.array([0.0, 0, 0, 1])  # camera at the origin looking along +z (OpenCV)
        point = np.array([[0.1, -0.05, 1.0]], np.float32)  # u = 100 * 0.1 + 40, v = 100 * -0.05 + 20
        frame = renderer.render(k, 64, 48, view(np.zeros(3), identity), [], depth=True,
                                particles=Particles(point, radius=0.02))
        assert frame.depth is not None
        assert frame.depth[15, 50] == pytest.approx(0.98, abs=1e-3)
        assert frame.rgb[15, 50, 2] > frame.rgb[15, 50, 0]  # the particles' blue
        assert not np.isfinite(frame.depth[40, 10])
    finally:
        renderer.close()


def test_a_bad_added_camera_is_one_line_with_its_path(
    sources: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """extra_cameras without target or quat_xyzw, or on a body the recording lacks: one line with the key's path."""
    import yaml

    for mount, message in (
        ({"pos": [0, 0, 1]}, "scenario.scene.mujoco.extra_cameras.top: give exactly one of target and quat_xyzw"),
        ({"pos": [0, 0, 1], "target": [0, 0, 0], "body": "workspace_target"},
         "extra_cameras.top.body: both.fsr has no geometry body 'workspace_target'"),
    ):
        document = yaml.safe_load(sources["replay"].read_text(encoding="utf-8"))
        document["scenario"]["scene"]["mujoco"]["extra_cameras"] = {"top": mount}
        run = tmp_path / "bad.yaml"
        run.write_text(yaml.safe_dump(document), encoding="utf-8")
        code = fsr_main(["replay", str(sources["both"]), str(run), "--output-dir", str(tmp_path), "--renderer", "moderngl"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2
        assert len(err) == 1
        assert message in err[0]


def test_a_moderngl_replay_never_imports_mujoco(sources: dict[str, Path], tmp_path: Path) -> None:
    """The second renderer runs in a process where MuJoCo is never imported (no physics engine at all)."""
    pytest.importorskip("moderngl")
    import subprocess

    script = (
        "import sys\n"
        "from fastsim_embedded.cli.replay import main\n"
        f"code = main([{str(sources['both'])!r}, {str(sources['replay'])!r}, '--output-dir', {str(tmp_path)!r},"
        " '--renderer', 'moderngl'])\n"
        "print(code, 'mujoco' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.stdout.strip().splitlines()[-1] == "0 False", done.stderr
