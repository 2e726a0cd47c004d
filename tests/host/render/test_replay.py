"""Render Replay on MuJoCo: exact posing, matching frames, mode render and the source fence."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

import cv2

from fastsim_embedded.render.replay import replay
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.cli import main as fsr_main
from fastsim_recording_format import FsrReader
from fastsim_recording_format.codecs.render_state import decode_render_state

pytestmark = pytest.mark.mujoco

_CAMERA = """
          {alias}:
            rgb: sensors.{alias}.camera.rgb
            intrinsics: sensors.{alias}.camera.intrinsics
            translation: sensors.{alias}.camera.extrinsics.translation
            quaternion_xyzw: sensors.{alias}.camera.extrinsics.quaternion_xyzw
            required: true
            every_n_samples: 1
            encoding: png"""


def _run(path: Path, name: str, streams: str, scene_extra: str = "", sensor_hz: int = 15) -> Path:
    path.write_text(
        f"""schema: fastsim/2
name: {name}
backend: mujoco
scenario:
  scene:
    robots:
      robot:
        use: robot://droid/panda-2f85
    mujoco: {{width: 96, height: 72, cameras: [exterior_left, wrist], reset_every_s: 0.6}}
{scene_extra}
runtime: {{sensor_hz: {sensor_hz}, rate_policy: exact}}
plugins:
  record:
    use: plugin://fastsim/record
    config:
      output: {{name: {name}.fsr}}
      streams:
{streams}
""",
        encoding="utf-8",
    )
    return path


def _cameras() -> str:
    return "        cameras:" + "".join(_CAMERA.format(alias=a) for a in ("exterior_left", "wrist"))


_JOINTS = """        observations:
          mode: explicit
          include:
            joint_position: {channel: robot.joint_position, required: true, every_n_samples: 1}
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[np.ndarray]]:
    """A live Run (cameras + render.state at the tick rate) and its Replay."""
    root = tmp_path_factory.mktemp("replay")
    live = _run(root / "live.yaml", "live", _JOINTS + _cameras() + "\n        render_state: {enabled: true, rate_hz: 15}")
    result = run_session(prepare_run(live, duration_s=1.0), root)
    assert result.outcome.ok, result.outcome.reason
    replay_run = _run(root / "replay.yaml", "replayed", _JOINTS + _cameras())
    outcome, backend = replay(root / "live.fsr", replay_run, root)
    assert outcome.outcome.ok, outcome.outcome.reason
    return root / "live.fsr", root / "replayed.fsr", backend.applied


def _frames(path: Path, alias: str) -> list[np.ndarray]:
    frames: list[np.ndarray] = []
    with FsrReader(path) as reader:
        for record in reader.records(f"cameras.{alias}.rgb"):
            frame = cv2.imdecode(np.frombuffer(record.payload, np.uint8), cv2.IMREAD_COLOR)
            assert frame is not None
            frames.append(np.asarray(frame))
    return frames


def test_replayed_joint_positions_equal_the_recorded_ones_bit_for_bit(
    recorded: tuple[Path, Path, list[np.ndarray]],
) -> None:
    """Replay poses each joint vector exactly: applied and re-observed bytes equal the source."""
    source, output, applied = recorded
    with FsrReader(source) as reader:
        states = [decode_render_state(r.payload) for r in reader.records("render.state")]
    expected = [s.arrays["articulation/robot/joint_position"].tobytes() for s in states]
    assert len(expected) == 15
    assert [a.astype("<f8").tobytes() for a in applied] == expected
    with FsrReader(output) as reader:
        observed = [r.payload for r in reader.records("observations") if r.kind.name == "DATA"]
    assert observed == expected


def test_replay_frames_match_live_frames_at_the_same_tick(
    recorded: tuple[Path, Path, list[np.ndarray]],
) -> None:
    """Each replayed frame matches the live frame of the same tick (moving wrist camera too)."""
    source, output, _ = recorded
    for alias in ("exterior_left", "wrist"):
        live, again = _frames(source, alias), _frames(output, alias)
        assert len(live) == len(again) == 15
        for a, b in zip(live, again, strict=True):
            diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
            assert float(diff.mean()) < 0.5
    wrist = _frames(source, "wrist")
    assert float(np.abs(wrist[0].astype(np.int16) - wrist[8].astype(np.int16)).mean()) > 1.0


def test_replay_footer_names_mode_source_and_complete_sequence(
    recorded: tuple[Path, Path, list[np.ndarray]],
) -> None:
    """The output is mode render with the source SHA-256 and its full render.state sequence."""
    source, output, _ = recorded
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    with FsrReader(output) as reader:
        footer = reader.footer
        assert reader.mode == "render"
    assert footer["source_sha256"] == digest
    fence = footer["terminal_fence"]["render_source"]
    assert fence["source_sha256"] == digest
    assert fence["records"] == 15
    assert fence["stream_sequence"] == {"first": 1, "last": 15}
    assert fence["complete"] is True
    assert fence["generations"] == [0, 1]


def test_fsr_replay_cli_refuses_a_source_without_render_state(
    recorded: tuple[Path, Path, list[np.ndarray]], capsys: pytest.CaptureFixture[str]
) -> None:
    """fsr replay on an FSR without render.state exits 2 with one line."""
    _, output, _ = recorded
    code = fsr_main(["replay", str(output), str(output.with_name("replay.yaml")), "--output-dir", str(output.parent)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "no 'render.state' stream" in err
    assert len(err.splitlines()) == 1


def test_replay_refuses_a_state_that_does_not_fit_the_scene(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A synthetic 7-joint source cannot pose the 13-joint scene: exit 2, one line."""
    source_run = tmp_path / "synthetic.yaml"
    source_run.write_text(
        "schema: fastsim/2\nname: s\nbackend: synthetic\nscenario: {scene: {robots: {robot: {use: robot://example/robot}}}}\n"
        "plugins:\n  record:\n    use: plugin://fastsim/record\n    config:\n"
        "      output: {name: s.fsr}\n      streams: {render_state: {enabled: true, rate_hz: 15}}\n",
        encoding="utf-8",
    )
    assert run_session(prepare_run(source_run, duration_s=0.5), tmp_path).outcome.ok
    replay_run = _run(tmp_path / "replay.yaml", "replayed", _cameras())
    code = fsr_main(["replay", str(tmp_path / "s.fsr"), str(replay_run), "--output-dir", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "has shape (7,), the scene's articulation (13,)" in err
    assert not (tmp_path / "replayed.fsr").exists()


def test_recorded_fluid_particles_are_drawn_in_replay(
    tmp_path: Path, recorded: tuple[Path, Path, list[np.ndarray]]
) -> None:
    """Particles from render.state are rendered in Replay exactly where the live Run drew them."""
    fluid = "    fluid: {name: water, rate_per_tick: 6, capacity: 400, origin: [0.45, 0.0, 0.3]}"
    live = _run(
        tmp_path / "live.yaml", "live", _cameras() + "\n        render_state: {enabled: true, rate_hz: 15}",
        fluid,
    )
    assert run_session(prepare_run(live, duration_s=1.0), tmp_path).outcome.ok
    with FsrReader(tmp_path / "live.fsr") as reader:
        last = decode_render_state(list(reader.records("render.state"))[-1].payload)
        assert {s.name for s in reader.streams} >= {"fluid.emissions", "render.state"}
    assert last.arrays["fluid/water/positions"].shape == (36, 3)  # 6 ticks since the reset at 0.6 s
    outcome, _ = replay(tmp_path / "live.fsr", _run(tmp_path / "replay.yaml", "replayed", _cameras()), tmp_path)
    assert outcome.outcome.ok, outcome.outcome.reason
    with_fluid, replayed = _frames(tmp_path / "live.fsr", "exterior_left"), _frames(tmp_path / "replayed.fsr", "exterior_left")
    dry = _frames(recorded[0], "exterior_left")
    for a, b in zip(with_fluid, replayed, strict=True):
        assert float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean()) < 0.5
    changed = np.abs(with_fluid[-1].astype(np.int16) - dry[-1].astype(np.int16)).max(axis=2) > 30
    assert int(changed.sum()) >= 5  # the particles are visible in the camera


def test_replay_output_keeps_the_source_generation_and_simulation_time(tmp_path: Path) -> None:
    """Replay records carry each source sample's (generation, sim time), not the Replay's own clock; physics never steps."""
    source_run = _run(
        tmp_path / "source.yaml", "source",
        "        observations: {mode: none, include: {}}\n        render_state: {enabled: true, rate_hz: 10}",
        sensor_hz=60,
    )
    prepared = prepare_run(source_run, duration_s=1.0)
    assert run_session(prepared, tmp_path).outcome.ok
    with FsrReader(tmp_path / "source.fsr") as reader:
        expected = [(r.generation, r.sim_time_ns) for r in reader.records("render.state")]
    # 60 Hz ticks sampled at 10 Hz, a reset at 0.6 s: sample times are not multiples of 1/15 s
    assert expected[0] == (0, round(1e9 / 60))
    assert {g for g, _ in expected} == {0, 1}
    replay_run = _run(tmp_path / "replay.yaml", "replayed", _JOINTS + _cameras())
    outcome, backend = replay(tmp_path / "source.fsr", replay_run, tmp_path)
    assert outcome.outcome.ok, outcome.outcome.reason
    assert len(backend.applied) == len(expected)
    assert backend.render_source().data.time == 0.0  # posed with mj_forward only: never stepped
    with FsrReader(tmp_path / "replayed.fsr") as reader:
        for stream in ("cameras.wrist.rgb", "observations"):
            got = [(r.generation, r.sim_time_ns) for r in reader.records(stream) if r.kind.name == "DATA"]
            assert got == expected, stream


def test_readme_flow_render_once_then_replay_needs_no_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped examples chain as the README shows: fsr record render-once, then fsr replay render-replay."""
    examples = Path(__file__).resolve().parents[3] / "examples"
    out = str(tmp_path)
    assert fsr_main(["record", str(examples / "render-once" / "run.yaml"), "--output-dir", out,
                     "--duration", "0.3", "--no-progress"]) == 0
    assert fsr_main(["replay", str(tmp_path / "source.fsr"), str(examples / "render-replay" / "run.yaml"),
                     "--output-dir", out]) == 0
    assert "replayed 10 render.state samples, mode render" in capsys.readouterr().out
    with FsrReader(tmp_path / "replay.fsr") as reader:
        assert reader.mode == "render"
        assert len(list(reader.records("cameras.wrist.rgb"))) == 10


def test_replay_refuses_to_commit_over_its_source(
    recorded: tuple[Path, Path, list[np.ndarray]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Replay whose output name would replace SOURCE exits 2 with one line and leaves SOURCE intact."""
    source = recorded[0]
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    same_name = _run(tmp_path / "same.yaml", "live", _cameras())
    code = fsr_main(["replay", str(source), str(same_name), "--output-dir", str(source.parent)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plugins.record.config.output.name: 'live.fsr' in ")
    assert "would replace the Replay source" in err
    assert len(err.splitlines()) == 1
    assert hashlib.sha256(source.read_bytes()).hexdigest() == digest
