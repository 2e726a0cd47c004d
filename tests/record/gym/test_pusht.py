"""Issue 23's example for real: gym-pusht -> FSR -> LeRobot v3 -> ``LeRobotDataset`` loads it.

The chain needs ``gym-pusht`` and ``lerobot`` (torch; lerobot 0.6 needs Python >= 3.12), which
this project's venv never installs: it runs with the interpreter named by
``FSR_LEROBOT_PYTHON`` (README, "Exporting") and is skipped, naming that command, otherwise.
The other tests hold what the chain found, on envs of this venv: an image-only observation
exports without ``observation.state``, an ``environment_state`` leaf is LeRobot's
``observation.environment_state``, and an uncalibrated camera exports its frames without
all-NaN calibration columns.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from gymnasium import spaces
from gymnasium.wrappers import FilterObservation
from tests.distributions import source_path
from tests.record.gym.envs import ImageEnv, SampledEnv
from tests.record.gym.play import play

import fastsim_record as fr
from fastsim_record.cli import main
from fastsim_record.gym import RecordEpisodes, read_episode

pytest.importorskip("av", reason="the lerobot extra (av) is not installed")

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "gym"
COMMAND = ("FSR_LEROBOT_PYTHON=/tmp/lerobot312/bin/python MUJOCO_GL=egl .venv/bin/python -m pytest -q "
           "tests/record/gym/test_pusht.py")


def _strict_json(path: Path) -> object:
    """``path`` parsed as strict JSON (``NaN``/``Infinity`` are not JSON: a JavaScript reader refuses them)."""
    def refuse(constant: str) -> object:
        raise ValueError(f"{path}: {constant} is not JSON")
    return json.loads(path.read_text(), parse_constant=refuse)


def test_an_image_only_observation_exports_to_lerobot_without_a_state(tmp_path: Path) -> None:
    """An image-only observation (gym-pusht's obs_type="pixels"; was refused) exports its frames and actions, no state."""
    env = RecordEpisodes(FilterObservation(ImageEnv(), ["image"]), tmp_path / "eps")
    played = play(env, [4])
    env.close()
    assert main(["export", str(tmp_path / "eps"), "--to", "lerobot", "-o", str(tmp_path / "lr"),
                 "--video-codec", "h264"]) == 0
    features = json.loads((tmp_path / "lr" / "meta" / "info.json").read_text())["features"]
    assert "observation.state" not in features
    assert features["observation.images.image"]["shape"] == [ImageEnv.H, ImageEnv.W, 3]
    rows = pq.read_table(tmp_path / "lr" / "data" / "chunk-000" / "file-000.parquet").to_pylist()
    assert len(rows) == len(played[0].observations)
    actions = [*played[0].actions, played[0].actions[-1]]  # the last frame holds the last action
    np.testing.assert_array_equal([r["action"] for r in rows], np.array(actions, np.float32))
    assert "observation.state" not in _strict_json(tmp_path / "lr" / "meta" / "stats.json")  # type: ignore[operator]


def test_an_image_only_observation_without_a_camera_is_refused_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same env recorded with images=False has neither a camera nor a state: one line, exit 1, nothing written."""
    env = RecordEpisodes(FilterObservation(ImageEnv(), ["image"]), tmp_path / "eps", images=False)
    play(env, [4])
    env.close()
    capsys.readouterr()
    assert main(["export", str(tmp_path / "eps"), "--to", "lerobot", "-o", str(tmp_path / "lr")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "nothing to export" in err
    assert not (tmp_path / "lr").exists()


def test_an_uncalibrated_camera_exports_its_frames_without_nan_calibration_columns(tmp_path: Path) -> None:
    """An uncalibrated camera (NaN K and pose) exports its video and no observation.cameras.* columns; stats.json is JSON."""
    env = RecordEpisodes(ImageEnv(), tmp_path / "eps")
    play(env, [4])
    env.close()
    assert main(["export", str(tmp_path / "eps"), "--to", "lerobot", "-o", str(tmp_path / "lr"),
                 "--video-codec", "h264"]) == 0
    features = json.loads((tmp_path / "lr" / "meta" / "info.json").read_text())["features"]
    assert "observation.images.image" in features
    assert [k for k in features if k.startswith("observation.cameras.")] == []
    columns = pq.read_schema(tmp_path / "lr" / "data" / "chunk-000" / "file-000.parquet").names
    assert [c for c in columns if c.startswith("observation.cameras.")] == []
    stats = _strict_json(tmp_path / "lr" / "meta" / "stats.json")
    assert isinstance(stats, dict)
    assert set(stats) >= {"observation.state", "action", "observation.images.image"}


def test_files_whose_cameras_differ_in_calibration_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """One dataset has one set of columns: a camera calibrated in one file and not in another is one line, exit 1."""
    from fastsim_record.export import _lerobot_rows

    env = RecordEpisodes(ImageEnv(), tmp_path / "eps")
    play(env, [4, 5])
    env.close()
    first, second = sorted((tmp_path / "eps").glob("*.fsr"))
    real = _lerobot_rows._calibrated
    monkeypatch.setattr(_lerobot_rows, "_calibrated",
                        lambda path, cams: cams if Path(path) == first else real(path, cams))
    capsys.readouterr()
    assert main(["export", str(first), str(second), "--to", "lerobot", "-o", str(tmp_path / "lr")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{second}: calibrated cameras [] differ from ['image', 'mask', 'rgba']" in err  # mask, rgba: PNG cameras


def _keypoint_env() -> SampledEnv:
    """gym-pusht's obs_type="environment_state_agent_pos" in shape: ``agent_pos`` [2] and ``environment_state`` [16]."""
    return SampledEnv(spaces.Dict({"agent_pos": spaces.Box(0.0, 512.0, (2,), np.float64),
                                   "environment_state": spaces.Box(0.0, 512.0, (16,), np.float64)}),
                      spaces.Box(0.0, 512.0, (2,), np.float32))


def test_an_environment_state_leaf_is_lerobots_environment_state_not_part_of_the_state(tmp_path: Path) -> None:
    """agent_pos is observation.state [2], environment_state observation.environment_state [16] (it was one state [18])."""
    env = RecordEpisodes(_keypoint_env(), tmp_path / "eps")
    played = play(env, [3])
    env.close()
    assert main(["export", str(tmp_path / "eps"), "--to", "lerobot", "-o", str(tmp_path / "lr")]) == 0
    features = json.loads((tmp_path / "lr" / "meta" / "info.json").read_text())["features"]
    assert features["observation.state"]["shape"] == [2]
    assert features["observation.environment_state"] == {
        "dtype": "float32", "shape": [16], "names": [f"observation.environment_state[{i}]" for i in range(16)]}
    rows = pq.read_table(tmp_path / "lr" / "data" / "chunk-000" / "file-000.parquet").to_pylist()
    observed = played[0].observations
    np.testing.assert_array_equal([r["observation.state"] for r in rows],
                                  np.array([o["agent_pos"] for o in observed], np.float32))
    np.testing.assert_array_equal([r["observation.environment_state"] for r in rows],
                                  np.array([o["environment_state"] for o in observed], np.float32))
    stats = _strict_json(tmp_path / "lr" / "meta" / "stats.json")
    assert isinstance(stats, dict)
    assert stats["observation.environment_state"]["count"] == [len(rows)]


def test_the_skip_reason_names_the_readme_command() -> None:
    """The command the chain's skip reason names is the README's, word for word."""
    assert COMMAND in (ROOT / "README.md").read_text()


def _lerobot_python() -> str:
    python = os.environ.get("FSR_LEROBOT_PYTHON")
    if not python:
        pytest.skip(f"FSR_LEROBOT_PYTHON is not set (a Python with lerobot[pusht] and this project): "
                    f"README 'Exporting': {COMMAND}")
    probe = subprocess.run([python, "-c", "import lerobot, gym_pusht, simplejpeg"], capture_output=True, text=True,
                           check=False)
    assert probe.returncode == 0, f"FSR_LEROBOT_PYTHON={python} cannot import lerobot, gym_pusht and this " \
                                  f"project's dependencies (README 'Exporting'):\n{probe.stderr[-1500:]}"
    return python


def _run(python: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": source_path(), "HF_HUB_OFFLINE": "1", "SVT_LOG": "1"}
    done = subprocess.run([python, *args], capture_output=True, text=True, env=env, check=False, timeout=900)
    assert done.returncode == 0, f"{' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255.0**2 / mse)


KEYPOINTS = ["--obs-type", "environment_state_agent_pos"]
STATE = {"dtype": "float32", "shape": [2], "names": ["observation.agent_pos[0]", "observation.agent_pos[1]"]}
ENV_STATE = {"dtype": "float32", "shape": [16], "names": [f"observation.environment_state[{i}]" for i in range(16)]}
INDEXES = ["timestamp", "frame_index", "episode_index", "index", "task_index"]


@pytest.mark.parametrize(("name", "args", "episodes"), [
    ("single", ["--episodes", "2", "--steps", "30"], 2),
    ("vector", ["--vector", "2", "--episodes", "2", "--steps", "12"], 4),
    ("keypoints", [*KEYPOINTS, "--episodes", "1", "--steps", "20"], 1),
])
def test_gym_pusht_records_exports_and_lerobot_dataset_loads_it(tmp_path: Path, name: str, args: list[str],
                                                                episodes: int) -> None:
    """Real PushT-v0 by examples/gym/pusht.py, validated, exported; LeRobotDataset decodes every item as recorded."""
    python = _lerobot_python()
    out, dataset = tmp_path / name, tmp_path / f"lerobot-{name}"
    printed = _run(python, str(EXAMPLES / "pusht.py"), "--out", str(out), *args).splitlines()
    files = sorted(out.glob("*.fsr"))
    assert len(files) == len(printed) == episodes
    assert all(line.endswith("normal: truncated") for line in printed)  # every episode ended by its TimeLimit
    assert main(["validate", str(out)]) == 0
    assert main(["export", str(out), "--to", "lerobot", "-o", str(dataset), "--task", "push the T"]) == 0
    summary = json.loads(_run(python, str(EXAMPLES / "load_lerobot.py"), str(dataset),
                              "--dump", str(tmp_path / "items.npz")).splitlines()[-1])
    recorded = [read_episode(f) for f in files]
    assert summary["episodes"] == episodes
    assert summary["fps"] == 10  # PushT's render_fps
    assert summary["items"] == sum(e.steps + 1 for e in recorded)  # one frame per observation, T + 1 per episode
    action = {"dtype": "float32", "shape": [2], "names": ["action[0]", "action[1]"]}
    keypoints = name == "keypoints"  # LeRobot's pusht env: agent_pos is the state, environment_state its own
    extra = {"observation.environment_state": ENV_STATE} if keypoints else {}
    assert summary["features"] == {"action": action, "observation.state": STATE, **extra}
    cameras = {} if keypoints else {"observation.images.pixels": [96, 96, 3]}
    assert summary["cameras"] == cameras
    assert summary["keys"] == sorted([*summary["features"], *cameras, *INDEXES])  # no NaN K columns
    items = np.load(tmp_path / "items.npz")
    worst = math.inf
    for index, (path, episode) in enumerate(zip(files, recorded, strict=True)):
        mine = items["episode_index"] == index
        assert items["frame_index"][mine].tolist() == list(range(episode.steps + 1))
        for key in ("observation.state", *extra):
            channel = "observation.agent_pos" if key == "observation.state" else key
            np.testing.assert_array_equal(items[key][mine], episode.observations[channel].astype(np.float32))
        actions = episode.actions["action"].astype(np.float32)
        np.testing.assert_array_equal(items["action"][mine], np.concatenate([actions, actions[-1:]]))
        with fr.open(path) as rec:
            for k, image in enumerate(items["observation.images.pixels"][mine] if cameras else []):
                worst = min(worst, _psnr(image, rec.frame("pixels", k).image))
    assert worst >= 30.0  # the recorded JPEG frame against LeRobot's decoded AV1 frame
