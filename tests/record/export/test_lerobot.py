"""``fsr export --to lerobot``: a LeRobot v3.0 dataset, checked by LeRobot's loading rules."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_record.cli import main

from .conftest import droid_run, record
from .lerobot_rules import LeRobotRules, psnr

pytest.importorskip("pyarrow", reason="the lerobot extra (pyarrow) is not installed")
pytest.importorskip("av", reason="the lerobot extra (av) is not installed")


@pytest.fixture(scope="module")
def two_files(droid_fsr: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    """Two copies of the DROID-like recording (2 generations each) exported to one dataset."""
    root = tmp_path_factory.mktemp("lerobot")
    second = root / "second.fsr"
    shutil.copy(droid_fsr, second)
    out = root / "dataset"
    assert main(["export", str(droid_fsr), str(second), "--to", "lerobot", "-o", str(out), "--quiet",
                 "--task", "pick the cube"]) == 0
    return [droid_fsr, second], out


def _commanded(seg: fr.Segment) -> tuple[np.ndarray, np.ndarray]:
    """The targets of every command.issued record of a segment (the control audit), with its time."""
    issued = [e for e in seg.control() if e.stream == "control.audit"]
    return np.array([e.time_ns for e in issued]), np.array([e.data["args"]["targets"] for e in issued])


def _expected(paths: list[Path]) -> list[tuple[Path, int]]:
    return [(p, g) for p in paths for g in fr.open(p).generations()]


def test_counts_agree(two_files: tuple[list[Path], Path]) -> None:
    """Episodes are the generations of all files; frames, rows, lengths and video frames all agree."""
    paths, out = two_files
    ds = LeRobotRules(out)
    episodes = _expected(paths)
    assert ds.info["total_episodes"] == len(ds.episodes) == len(episodes) == 4
    lengths = [fr.open(p).segment(g).frame_count("wrist") for p, g in episodes]
    assert [e["length"] for e in ds.episodes] == lengths
    assert ds.info["total_frames"] == len(ds.data) == sum(lengths)
    assert [r["index"] for r in ds.data] == list(range(len(ds.data)))
    assert ds.info["fps"] == 15
    assert sorted(ds.video_keys) == [f"observation.images.{c}" for c in ("exterior_left", "exterior_right", "wrist")]
    for key in ds.video_keys:
        assert ds.video_frame_count(key) == sum(lengths)
    assert ds.tasks == [{"task_index": 0, "task": "pick the cube"}]
    assert ds.info["features"]["observation.images.wrist"]["info"]["video.codec"] == "av1"


def test_every_frame_matches_the_fsr_frame(two_files: tuple[list[Path], Path]) -> None:
    """Every decoded frame at from_timestamp + timestamp (within 1e-4 s) has PSNR >= 30 dB to the FSR frame."""
    paths, out = two_files
    ds = LeRobotRules(out)
    episodes = _expected(paths)
    worst = float("inf")
    for row in ds.data:
        assert row["timestamp"] == np.float32(row["frame_index"] / ds.info["fps"])
        path, g = episodes[row["episode_index"]]
        ep = fr.open(path).segment(g)
        for cam in ("exterior_left", "exterior_right", "wrist"):
            worst = min(worst, psnr(ds.frame(f"observation.images.{cam}", row), ep.frame(cam, row["frame_index"]).image))
    assert worst >= 30.0


def test_state_action_and_calibration_equal_the_recorded_values(two_files: tuple[list[Path], Path]) -> None:
    """state is position then velocity (float32), action the command sent after the frame's tick, K and pose: exact."""
    paths, out = two_files
    ds = LeRobotRules(out)
    episodes = _expected(paths)
    feats = ds.info["features"]
    assert feats["action"]["dtype"] == feats["observation.state"]["dtype"] == "float32"
    assert feats["action"]["names"] == ["joint1", "joint2", "joint3", "joint4", "joint5", "joint6", "joint7", "finger_joint"]
    rec = fr.open(paths[0])
    assert feats["observation.state"]["names"] == [*rec.numeric("robot.joint_position").names,
                                                   *rec.numeric("robot.joint_velocity").names]
    for row in ds.data:
        path, g = episodes[row["episode_index"]]
        ep = fr.open(path).segment(g)
        t = ep.frame("wrist", row["frame_index"]).time_ns
        q, v = ep.numeric("robot.joint_position"), ep.numeric("robot.joint_velocity")
        k = int(np.flatnonzero(q.time_ns <= t)[-1])
        np.testing.assert_array_equal(row["observation.state"],
                                      np.concatenate([q.values[k], v.values[k]]).astype(np.float32))
        at, targets = _commanded(ep)
        j = int(np.searchsorted(at, t, "right"))  # the first command after the frame's observation
        np.testing.assert_array_equal(row["action"], targets[min(j, len(at) - 1)].astype(np.float32))
        cal = ep.calibration("exterior_left")
        np.testing.assert_array_equal(row["observation.cameras.exterior_left.intrinsics"],
                                      cal.k[row["frame_index"]].reshape(-1))
        np.testing.assert_array_equal(row["observation.cameras.exterior_left.extrinsics"],
                                      np.concatenate([cal.translation[row["frame_index"]],
                                                      cal.quaternion_xyzw[row["frame_index"]]]))
    assert ds.stats["observation.state"]["count"] == [len(ds.data)]
    assert np.asarray(ds.stats["observation.images.wrist"]["mean"]).shape == (3, 1, 1)


def test_a_camera_rate_that_is_not_an_integer_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Cameras at 12.5 Hz are refused with one line naming the file and the rate; nothing is written."""
    run = droid_run(duration_s=0.8, reset_every_s=10.0)
    run["runtime"]["sensor_hz"] = 12.5  # type: ignore[index]
    run["scenario"]["scene"]["mujoco"]["control_hz"] = 12.5  # type: ignore[index]
    root = tmp_path_factory.mktemp("lerobot-rates")
    path = record(run, root / "rec")
    capsys.readouterr()
    assert main(["export", str(path), "--to", "lerobot", "-o", str(root / "ds")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert str(path) in err
    assert "12.500000 Hz is not an integer" in err
    assert not (root / "ds").exists()
    assert [p.name for p in root.iterdir()] == ["rec"]


LEROBOT_LOAD = textwrap.dedent("""
    import sys
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    ds = LeRobotDataset("local/fsr-export", root=sys.argv[1], video_backend="pyav")
    n = 0
    for i in range(len(ds)):
        item = ds[i]
        assert item["observation.images.wrist"].shape == (3, 240, 320), item["observation.images.wrist"].shape
        n += 1
    print(n, ds.num_episodes)
""")


def test_lerobot_loads_and_iterates_the_dataset(two_files: tuple[list[Path], Path]) -> None:
    """LeRobotDataset(root=..., video_backend='pyav') loads the export and iterates every item (needs lerobot)."""
    python = os.environ.get("FSR_LEROBOT_PYTHON", sys.executable)
    probe = subprocess.run([python, "-c", "import lerobot"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"lerobot is not importable by {python}; see README 'Exporting' (FSR_LEROBOT_PYTHON)")
    _, out = two_files
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    done = subprocess.run([python, "-c", LEROBOT_LOAD, str(out)], capture_output=True, text=True, env=env,
                          check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == [str(LeRobotRules(out).info["total_frames"]), "4"]
