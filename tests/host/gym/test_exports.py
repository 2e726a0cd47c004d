"""Exports of a policy-driven episode carry the action: LeRobot ``action`` from the recorded
commands, MCAP and Rerun the commands beside the joint states."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_embedded.gym import FastSimRunEnv
from fastsim_record.cli import main

from .conftest import PICK

NAMES = [*(f"joint{k}" for k in range(1, 8)), "finger_joint"]


@pytest.fixture(scope="module")
def driven(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[list[float]]]:
    """A MuJoCo pick episode driven by 10 random actions (wrist camera recorded)."""
    out = tmp_path_factory.mktemp("driven")
    env = FastSimRunEnv(PICK, out)
    env.action_space.seed(3)
    env.reset(seed=3)
    actions = []
    for _ in range(10):
        action = env.action_space.sample()
        env.step(action)
        actions.append(action.tolist())
    env.close()
    return Path(env.committed[0]), actions


def test_lerobot_action_comes_from_the_recorded_commands(driven: tuple[Path, list[list[float]]], tmp_path: Path) -> None:
    """LeRobot's action is the action sent after each frame (the control audit, not ctrl nor state); the last holds."""
    pytest.importorskip("av", reason="the lerobot extra is not installed")
    from tests.record.export.lerobot_rules import LeRobotRules

    path, actions = driven
    out = tmp_path / "dataset"
    assert main(["export", str(path), "--to", "lerobot", "-o", str(out), "--quiet", "--include", "stopped"]) == 0
    ds = LeRobotRules(out)
    assert ds.info["features"]["action"]["names"] == NAMES
    assert ds.info["features"]["action"]["dtype"] == "float32"
    assert len(ds.data) == 11  # the reset tick and 10 steps
    sent = np.array(actions, np.float32)
    exported = np.array([row["action"] for row in ds.data], np.float32)
    np.testing.assert_array_equal(exported[:10], sent)  # observation k, then action k
    np.testing.assert_array_equal(exported[10], sent[9])
    with fr.open(path) as rec:
        state = rec.numeric("robot.joint_position")
        acts = rec.actions()
    np.testing.assert_array_equal(acts.values[:10], np.array(actions))
    assert acts.issued.tolist() == [True] * 10 + [False]
    # not the state: the arm lags its targets
    assert not np.allclose(exported[:, :7], state.values[:, :7])


def test_mcap_carries_the_commands_beside_the_joint_states(driven: tuple[Path, list[list[float]]], tmp_path: Path) -> None:
    """/command/robot.set_joint_targets holds the actions sent, with element names and units, beside /numeric."""
    pytest.importorskip("foxglove", reason="the mcap extra is not installed")
    from mcap.reader import make_reader

    path, actions = driven
    out = tmp_path / "driven.mcap"
    assert main(["export", str(path), "--to", "mcap", "-o", str(out), "--quiet", "--include", "stopped"]) == 0
    messages: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    import json

    with out.open("rb") as f:
        for _, channel, message in make_reader(f).iter_messages(topics=[
                "/command/robot.set_joint_targets", "/numeric/robot.joint_position"]):
            messages[channel.topic].append(json.loads(message.data))
    commands = messages["/command/robot.set_joint_targets"]
    assert [m["values"] for m in commands] == actions
    assert commands[0]["names"] == NAMES
    assert commands[0]["units"] == ["rad"] * 8
    assert len(messages["/numeric/robot.joint_position"]) == 11


def test_rerun_carries_the_commands_beside_the_joint_states(driven: tuple[Path, list[list[float]]], tmp_path: Path) -> None:
    """command/robot.set_joint_targets has one Scalars row per action and the element names as series names."""
    pytest.importorskip("rerun", reason="the rerun extra is not installed")
    from rerun.chunk import RrdReader

    path, actions = driven
    out = tmp_path / "driven.rrd"
    assert main(["export", str(path), "--to", "rerun", "-o", str(out), "--quiet", "--include", "stopped"]) == 0
    rows: dict[str, int] = collections.Counter()
    names: list[str] = []
    for chunk in RrdReader(str(out)).stream().to_chunks():
        if chunk.is_static:
            if chunk.entity_path == "/command/robot.set_joint_targets":
                batch = chunk.to_record_batch()
                names += [n for col in batch.schema.names if col.endswith("names")
                          for row in batch.column(col).to_pylist() for n in (row or [])]
            continue
        rows[chunk.entity_path] += chunk.num_rows
    assert rows["/command/robot.set_joint_targets"] == len(actions)
    assert rows["/numeric/robot.joint_position"] == 11
    assert names == NAMES
