"""FastSimRun-v0 under Gymnasium's own vector envs: one host per sub-env, names never collide."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import fastsim_record as fr
from fastsim_recording_format import validate

from .conftest import reach_run

ENV = "fastsim_embedded.gym:FastSimRun-v0"


def _check_files(folder: Path, per_env: int, num_envs: int) -> list[Path]:
    paths = sorted(folder.glob("*.fsr"))
    assert len(paths) == num_envs * per_env
    assert not list(folder.glob("*.incomplete"))
    for k in range(num_envs):
        assert len([p for p in paths if p.stem.endswith(f"-env{k}")]) == per_env
    runs = set()
    for path in paths:
        assert validate(path).validated_bytes == path.stat().st_size
        with fr.open(path) as rec:
            runs.add(rec.info.run_id)
    assert len(runs) == len(paths)  # distinct episodes, not copies
    return paths


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_a_vector_env_of_4_commits_4_x_n_distinct_valid_files(tmp_path: Path, mode: str) -> None:
    """NEXT_STEP autoreset: 5 steps truncate; 12 steps = 2 whole episodes + a third closed by close()."""
    envs = gym.make_vec(ENV, num_envs=4, vectorization_mode=mode,
                        run=str(reach_run(tmp_path, duration_s=10.0)), output_dir=str(tmp_path / "out"), max_steps=5)
    envs.reset(seed=100)
    truncations = np.zeros(4, dtype=int)
    for _ in range(12):
        _, _, terminated, truncated, _ = envs.step(envs.action_space.sample())
        truncations += truncated
        assert not terminated.any()
    envs.close()
    assert truncations.tolist() == [2, 2, 2, 2]
    paths = _check_files(tmp_path / "out", 3, 4)
    kinds = {}
    for path in paths:
        with fr.open(path) as rec:
            kinds[path.name] = (rec.info.completion, rec.info.seed)
    assert sorted(str(v[0]) for v in kinds.values()) == ["normal"] * 8 + ["stopped"] * 4
    seeds = [v[1] for v in kinds.values()]
    assert len(set(seeds)) == 12
    assert {100, 101, 102, 103} <= set(seeds)
