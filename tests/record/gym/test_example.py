"""examples/gym: the random-policy script, single and vector, then fsr export --to lerobot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.distributions import source_path
from tests.record.export.lerobot_rules import LeRobotRules

from fastsim_record.cli import main
from fastsim_record.gym import read_episode

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "gym" / "random_policy.py"


def test_the_random_policy_example_records_and_exports_to_lerobot(tmp_path: Path) -> None:
    """Single and vector HalfCheetah episodes, each a valid file, exported to one LeRobot v3 dataset each."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("av")
    env = {**os.environ, "PYTHONPATH": source_path(), "MUJOCO_GL": "egl"}
    for args, out in ((["--episodes", "2", "--steps", "15"], "single"), (["--vector", "2", "--steps", "10"], "vector")):
        done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / out), *args],
                              capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        files = sorted((tmp_path / out).glob("*.fsr"))
        assert len(files) == len(done.stdout.splitlines()) >= 2
        assert main(["validate", str(tmp_path / out)]) == 0
        dataset = tmp_path / f"lerobot-{out}"
        assert main(["export", str(tmp_path / out), "--to", "lerobot", "-o", str(dataset), "--task", "run",
                     "--include", "stopped"]) == 0  # every file: close() ends the open episodes stopped
        info = json.loads((dataset / "meta" / "info.json").read_text())
        assert info["total_episodes"] == len(files)
        assert "observation.images.render" in info["features"]
        assert info["features"]["action"]["shape"] == [6]
        # loaded the way LeRobot loads it: every row's frame by its timestamp rule, actions as recorded
        loaded = LeRobotRules(dataset)
        assert len(loaded.data) == sum(len(read_episode(f).rewards) + 1 for f in files)  # one frame per row
        for row in loaded.data[:: max(1, len(loaded.data) // 10)]:
            assert loaded.frame("observation.images.render", row).shape == (240, 320, 3)
        first = read_episode(files[0])
        exported = np.array([r["action"] for r in loaded.data if r["episode_index"] == 0][: first.steps])
        np.testing.assert_allclose(exported, first.actions["action"].astype(np.float64), rtol=1e-6)
