"""Issue 25's "Done means": a 12-episode sweep with 2 stopped episodes and 1 failed one,
resumed to 15, indexed and moved, gives a `Dataset` (default filter) and a LeRobot export
of exactly the 13 normal episodes, actions included.

The episodes are made so by the real host: episode 5's name is taken by a directory, so
its process fails (the operator then removes it, and ``--resume`` records it again), and
episodes 3 and 8 get SIGINT from the test while they record at real time, so they commit
what they have as ``stopped`` (``--resume`` keeps them: they are committed).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.record.export.lerobot_rules import LeRobotRules, psnr

import fastsim_record as fr
from fastsim_recording_format.reading._sources import LeftOutWarning

pytestmark = pytest.mark.slow
pa = pytest.importorskip("pyarrow", reason="the index and lerobot extras (pyarrow) are not installed")
pytest.importorskip("av", reason="the lerobot extra (av) is not installed")

ROOT = Path(__file__).resolve().parents[3]
FSR = str(Path(sys.executable).with_name("fsr"))
ENV = {**os.environ, "MUJOCO_GL": "egl", "PYTHONUNBUFFERED": "1"}
RUN = ROOT / "examples" / "training" / "run.yaml"  # runtime.seed 0: episode k has seed k
STOPPED, FAILED = (3, 8), 5
# 2 s per episode at real time, so that SIGINT finds each chosen episode recording
PACE = ("--duration", "2", "--realtime", "1", "--jobs", "2")


def _name(k: int) -> str:
    return f"train-seed{k}-{k:04d}.fsr"


def _fsr(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FSR, *args], capture_output=True, text=True, env=ENV, timeout=600, check=False)


def _episode_process(out: Path, episode: int) -> int | None:
    """The pid of the sweep's process for one episode (its command line names both)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if "--sweep-worker" in argv and str(out) in argv and argv[argv.index("--episode") + 1] == str(episode):
            return int(entry.name)
    return None


def _sweep_with_stops(out: Path) -> tuple[int, str, str]:
    """12 episodes; SIGINT to episodes 3 and 8 once each records; episode 5's name is a directory."""
    (out / _name(FAILED)).mkdir(parents=True)
    proc = subprocess.Popen([FSR, "record", str(RUN), "--episodes", "12", *PACE, "--overwrite", "--output-dir",
                             str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    waiting, end = set(STOPPED), time.monotonic() + 300
    while waiting and proc.poll() is None and time.monotonic() < end:
        for k in sorted(waiting):
            if (out / f"{_name(k)}.incomplete").exists():
                pid = _episode_process(out, k)
                if pid is not None:
                    time.sleep(0.3)
                    os.kill(pid, signal.SIGINT)
                    waiting.discard(k)
        time.sleep(0.02)
    stdout, stderr = proc.communicate(timeout=300)
    assert not waiting, f"episodes {sorted(waiting)} were never seen recording\n{stdout}{stderr}"
    return proc.returncode, stdout, stderr


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The sweep, its resume to 15, the index, the folder moved, and the LeRobot export of the moved index."""
    root = tmp_path_factory.mktemp("training-set")
    data = root / "data"
    code, stdout, stderr = _sweep_with_stops(data)
    assert code == 1, stdout + stderr
    assert "sweep of 12 episodes: 9 committed, 2 stopped, 1 failed, 0 not run" in stdout, stdout + stderr
    (data / _name(FAILED)).rmdir()  # the cause of the failure removed
    resumed = _fsr("record", str(RUN), "--episodes", "15", *PACE, "--resume", "--output-dir", str(data))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "--resume: 11 of 15 episodes committed already, 0 left as .incomplete; recording 4" in resumed.stderr
    assert "sweep of 15 episodes: 11 committed before, 4 committed, 0 stopped, 0 failed, 0 not run" in resumed.stdout
    indexed = _fsr("index", str(data), "-o", str(data / "index.parquet"))
    assert indexed.returncode == 0, indexed.stderr
    target = root / "elsewhere" / "set"
    target.parent.mkdir()
    data.rename(target)
    exported = _fsr("export", str(target / "index.parquet"), "--to", "lerobot", "-o", str(root / "lerobot"),
                    "--task", "follow the offsets")
    assert exported.returncode == 0, exported.stderr
    normal = [target / _name(k) for k in range(15) if k not in STOPPED]
    return {"index": target / "index.parquet", "normal": normal, "lerobot": root / "lerobot",
            "export_summary": exported.stdout + exported.stderr}


def test_the_moved_index_lists_15_episodes_by_relative_path(moved: dict[str, Any]) -> None:
    """15 rows, paths relative to the index; 13 normal, episodes 3 and 8 stopped; none failed validation."""
    import pyarrow.parquet as pq

    rows = pq.read_table(moved["index"]).to_pylist()
    assert sorted(r["path"] for r in rows) == sorted(_name(k) for k in range(15))
    assert {r["path"]: r["completion"] for r in rows} == {
        _name(k): "stopped" if k in STOPPED else "normal" for k in range(15)}
    assert all(r["error"] is None for r in rows)
    stopped = [r for r in rows if r["completion"] == "stopped"]
    assert all(r["sim_duration_s"] < 2.0 for r in stopped)


def test_the_dataset_of_the_moved_index_holds_the_13_normal_episodes_with_their_actions(moved: dict[str, Any]) -> None:
    """Default filter: exactly the 13 normal files; every sample's action is rec.actions() at its tick."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = fr.Dataset(moved["index"], channels=["robot.joint_position"], action=True)
    assert [str(w.message) for w in caught if issubclass(w.category, LeftOutWarning)] == [
        "left out 2 of 15 episodes: 2 stopped (include='stopped' keeps them)"]
    assert ds.left_out == {"stopped": 2}
    assert sorted(Path(p).resolve() for p in ds.paths) == sorted(p.resolve() for p in moved["normal"])
    got: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for i in range(len(ds)):
        s = ds[i]
        one = got[str(Path(ds.paths[int(s["file_index"])]).resolve())]
        for key in ("robot.joint_position", "action", "action_is_pad", "action_accepted", "time_ns"):
            one[key].append(s[key])
    assert len(got) == 13
    for path in moved["normal"]:
        with fr.open(path) as rec:
            acts = rec.actions()
            q = rec.numeric("robot.joint_position")
        one = got[str(path.resolve())]
        assert acts.issued.sum() >= 5  # a command every 0.2 s of 2 s
        np.testing.assert_array_equal(np.stack(one["time_ns"]), q.time_ns)
        np.testing.assert_array_equal(np.stack(one["robot.joint_position"]), q.values)
        np.testing.assert_array_equal(np.stack(one["action"]), acts.values)  # NaN where nothing was sent
        np.testing.assert_array_equal(np.stack(one["action_is_pad"]), ~acts.issued)
        np.testing.assert_array_equal(np.stack(one["action_accepted"]), acts.accepted)


def _expected_action(actions: Any, time_ns: int) -> Any:
    """The export's rule: the latest accepted command at or before the frame's time, else the first."""
    keep = np.flatnonzero(actions.issued & actions.accepted)
    before = keep[actions.time_ns[keep] <= time_ns]
    return actions.values[before[-1] if len(before) else keep[0]].astype(np.float32)


def test_the_lerobot_export_of_the_moved_index_holds_the_same_13(moved: dict[str, Any]) -> None:
    """Read by LeRobot's rules with pyarrow and PyAV: 13 episodes, one per normal file; frames, images and actions."""
    assert moved["export_summary"].strip().endswith(
        "left out 2 of 15 episodes: 2 stopped (--include stopped keeps them)"), moved["export_summary"]
    ds = LeRobotRules(moved["lerobot"])
    assert ds.info["total_episodes"] == len(ds.episodes) == 13
    assert ds.info["features"]["action"]["names"] == ["offset[0]"]
    by_episode: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in ds.data:
        by_episode[row["episode_index"]].append(row)
    first_state = {}
    for path in moved["normal"]:
        with fr.open(path) as rec:
            first_state[path] = rec.numeric("robot.joint_position").values[0].astype(np.float32).tobytes()
    matched, worst = [], float("inf")
    for e in ds.episodes:
        rows = by_episode[e["episode_index"]]
        state0 = np.asarray(rows[0]["observation.state"], dtype=np.float32)[:7].tobytes()
        (path,) = [p for p, s in first_state.items() if s == state0]
        matched.append(path)
        with fr.open(path) as rec:
            actions = rec.actions()
            frames = [rec.frame("cam00", i) for i in range(rec.frame_count("cam00"))]
        assert e["length"] == len(rows) == len(frames)
        for row, frame in zip(rows, frames):
            np.testing.assert_array_equal(np.asarray(row["action"], dtype=np.float32),
                                          _expected_action(actions, frame.time_ns))
            worst = min(worst, psnr(ds.frame("observation.images.cam00", row), frame.image))
    assert sorted(matched) == sorted(moved["normal"])
    assert ds.info["total_frames"] == len(ds.data) == sum(e["length"] for e in ds.episodes)
    assert ds.video_frame_count("observation.images.cam00") == len(ds.data)
    assert worst >= 30.0


LEROBOT_LOAD = textwrap.dedent("""
    import sys
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    ds = LeRobotDataset("local/fsr-training-set", root=sys.argv[1], video_backend="pyav")
    n = 0
    for i in range(len(ds)):
        item = ds[i]
        assert item["observation.images.cam00"].shape == (3, 64, 96), item["observation.images.cam00"].shape
        assert item["action"].numel() == 1, item["action"].shape  # shape [1]: LeRobot serves a scalar
        n += 1
    print(n, ds.num_episodes)
""")


def test_lerobot_loads_the_export_of_the_moved_index(moved: dict[str, Any]) -> None:
    """LeRobotDataset reads the 13 episodes back (lerobot needs torch: FSR_LEROBOT_PYTHON, README 'Exporting')."""
    python = os.environ.get("FSR_LEROBOT_PYTHON", sys.executable)
    probe = subprocess.run([python, "-c", "import lerobot"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"lerobot is not importable by {python}; see README 'Exporting' (FSR_LEROBOT_PYTHON)")
    done = subprocess.run([python, "-c", LEROBOT_LOAD, str(moved["lerobot"])], capture_output=True, text=True,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"), check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    total = json.loads((moved["lerobot"] / "meta" / "info.json").read_text())["total_frames"]
    assert done.stdout.split()[-2:] == [str(total), "13"]
