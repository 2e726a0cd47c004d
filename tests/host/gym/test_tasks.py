"""Tasks in the scene schema, their outcome in every Run, and the outcome in fsr info / fsr index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import fastsim_record as fr
from fastsim_embedded.backends.tasks import TaskSpec, TaskTracker
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.cli import main

from .conftest import PICK, REACH, ROOT, reach_run

POLICY = ROOT / "examples" / "policy" / "run_policy.py"


@pytest.mark.parametrize(("task", "where", "hint"), [
    ({"rech": {}}, "scenario.scene.task.rech", "did you mean 'reach'?"),
    ({"reach": {"tolerence_m": 0.1}}, "scenario.scene.task.reach.tolerence_m", "did you mean 'tolerance_m'?"),
    ({"reach": {"tolerance_m": -1}}, "scenario.scene.task.reach.tolerance_m", "must be a number above 0"),
    ({"pick": {}}, "scenario.scene.task.pick", "valid keys are 'reach'"),  # the synthetic scene has no object
])
def test_fsr_check_validates_the_task_with_a_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], task: dict[str, object], where: str, hint: str
) -> None:
    """fsr check reports a mistyped task, parameter or value at its full path, with a did-you-mean."""
    code = main(["check", str(reach_run(tmp_path, task=task))])
    err = capsys.readouterr().err
    assert code == 2
    assert where in err
    assert hint in err


def test_fsr_check_names_a_mistyped_pick_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pick task naming an unknown object gets a did-you-mean from the scene's objects."""
    document = yaml.safe_load(PICK.read_text())
    document["scenario"]["scene"]["task"] = {"pick": {"object": "cub"}}
    path = tmp_path / "pick.yaml"
    path.write_text(yaml.safe_dump(document))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "scenario.scene.task.pick.object" in err
    assert "did you mean 'cube'?" in err


def test_a_scripted_pick_records_its_reward_and_succeeds(tmp_path: Path) -> None:
    """No driver: the scene's own scripted pick plays (unchanged) and the task outcome is recorded."""
    result = run_session(prepare_run(PICK, duration_s=4.0), tmp_path)
    (path,) = result.outcome.committed
    with fr.open(path) as rec:
        (outcome,) = [e.data["data"] for e in rec.events() if e.data.get("event") == "task.result"]
        reward = rec.numeric("task.reward").values[:, 0]
        issued = [e.data for e in rec.control() if e.data.get("event") == "command.issued"]
        task = rec.info.attributes["task"]
    assert outcome["success"] is True
    assert outcome["task"] == "pick"
    assert outcome["steps"] == 59  # 60 ticks; the first is the reset's, not a step
    assert outcome["return"] == pytest.approx(float(reward[1:].sum()))
    assert all(d["command"] == "set_joint_targets" and d["command_id"].startswith("pick-") for d in issued)
    assert task["kind"] == "pick"
    assert task["object"] == "cube"
    assert task["height_m"] == 0.1
    # the explicit include (joint state only) was extended with the task's channels
    assert len(reward) == 60
    assert reward[-1] > reward[0]


def test_a_run_without_a_task_records_no_task_and_info_shows_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without a task: no task channel, no task metadata, and fsr info's task is null."""
    path = tmp_path / "plain.yaml"
    path.write_text((ROOT / "examples" / "minimal" / "run.yaml").read_text())
    result = run_session(prepare_run(path, duration_s=0.5), tmp_path / "out")
    (committed,) = result.outcome.committed
    assert main(["info", "--json", str(committed)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["task"] is None
    with fr.open(committed) as rec:
        assert "task" not in rec.info.attributes
        assert not [c for c in rec.channels() if c.startswith("task.")]


def test_the_example_policies_succeed_and_fail_and_fsr_index_shows_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/policy: the scripted reach succeeds on every episode, the random policy on none."""
    out = tmp_path / "policy"
    for policy in ("scripted", "random"):
        done = subprocess.run([sys.executable, str(POLICY), "--policy", policy, "--episodes", "2",
                               "--output-dir", str(out), "--seed", "5"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        success = [line.split("success ")[1].split(",")[0] for line in done.stdout.splitlines()]
        assert success == (["true", "true"] if policy == "scripted" else ["false", "false"])
    assert main(["index", str(out), "-o", str(tmp_path / "index.parquet")]) == 0
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "index.parquet").to_pylist()
    assert sorted(r["success"] for r in rows) == [False, False, True, True]
    assert all(r["task"] == "reach" and r["return"] > 0 for r in rows)
    assert all(r["completion"] == "normal" for r in rows)  # terminated (success) and truncated both commit normal
    capsys.readouterr()
    winner = next(str(tmp_path / r["path"]) for r in rows if r["success"])  # a path relative to the index
    assert main(["info", winner]) == 0
    assert "task reach: success true, return " in capsys.readouterr().out


def test_fsr_info_json_carries_success_and_return(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fsr info --json: task, success, steps, and the return: the sum of task.reward after the reset tick."""
    result = run_session(prepare_run(REACH, duration_s=0.5), tmp_path)
    (path,) = result.outcome.committed
    assert main(["info", "--json", str(path)]) == 0
    task = json.loads(capsys.readouterr().out)["task"]
    with fr.open(path) as rec:
        total = float(np.sum(rec.numeric("task.reward").values[1:]))  # the reset's tick is not a step
    assert task["task"] == "reach"
    assert task["success"] is False
    assert task["steps"] == 14
    assert task["return"] == pytest.approx(total)


def test_reach_succeeds_only_after_holding_and_its_reward_is_dense() -> None:
    """Reach: the reward grows as the end effector nears the target; success needs hold_s inside the tolerance."""
    tracker = TaskTracker.create(TaskSpec("reach", tolerance_m=0.05, hold_s=0.1), sensor_hz=30.0)  # 3 ticks
    tracker.reset(np.zeros(3))
    far = tracker.update(np.array([0.5, 0.0, 0.0]))
    near = tracker.update(np.array([0.1, 0.0, 0.0]))
    assert 0.0 < far < near < 1.0
    inside = [tracker.update(np.array([0.01, 0.0, 0.0])) and tracker.success for _ in range(3)]
    assert inside == [False, False, True]
    assert tracker.result()["success"] is True
    assert tracker.result()["steps"] == 4  # the first update scores the reset's tick: not a step
    tracker.update(np.array([0.5, 0.0, 0.0]))
    assert tracker.success is False
    assert tracker.result()["success"] is True  # sticky over the episode


def test_pick_succeeds_when_lifted_and_held_and_fails_when_the_object_falls() -> None:
    """Pick: grasped and lifted pays more; held above height_m succeeds; falling fall_m fails."""
    tracker = TaskTracker.create(TaskSpec("pick", height_m=0.1, hold_s=0.0), sensor_hz=15.0)
    start = np.array([0.5, 0.0, 0.025])
    tracker.reset(start)
    up = np.array([0.0, 0.0, 1.0])
    resting = tracker.update(start + 0.01 * up, start, gripper=0.0)
    lifted = tracker.update(start + 0.12 * up, start + 0.11 * up, gripper=1.0)
    assert tracker.success is True
    assert lifted > resting + 2.0
    tracker.reset(start)
    tracker.update(start, start - 0.2 * up, gripper=0.0)
    assert tracker.failure is True
    assert tracker.success is False


def test_an_index_made_before_the_task_columns_reads_its_files_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row of an older index (no task columns) is not reused: the file is read and its outcome filled in."""
    import pyarrow.parquet as pq

    result = run_session(prepare_run(REACH, duration_s=0.5), tmp_path / "out")
    index = tmp_path / "index.parquet"
    assert main(["index", str(tmp_path / "out"), "-o", str(index)]) == 0
    table = pq.read_table(index)
    pq.write_table(table.drop_columns(["task", "success", "return"]), index)  # the older layout, same metadata
    assert main(["index", str(tmp_path / "out"), "-o", str(index)]) == 0
    assert "1 read, 0 unchanged" in capsys.readouterr().out
    (row,) = pq.read_table(index).to_pylist()
    assert tmp_path / row["path"] == result.outcome.committed[0]  # relative to the index's folder
    assert row["task"] == "reach"
    assert row["success"] is False
