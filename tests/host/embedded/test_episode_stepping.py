"""The steppable session: test code drives one Run tick by tick through ``Session``.

The scripted ``fsr record`` (``run_session``) is one driver of ``Session``; these tests are
another.  They check that a driven session records exactly what the driver sent and what
each tick returned, that stepping the scene's own script by hand gives the same file
contents as ``run_session``, that ``reset(seed)`` ends the Run and opens the next episode
with that seed, and that the session refuses steps once it has ended.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import fastsim_record as fr
from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import ControlCommand, ScenePluginEvent
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import Session, SessionClosed, run_session
from fastsim_recording_format import FsrReader, validate

RECORD = "plugin://fastsim/record"


def _run(tmp_path: Path, name: str = "stepped.fsr", scene: dict[str, object] | None = None) -> Path:
    path = tmp_path / f"{Path(name).stem}.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "stepped", "backend": "synthetic",
        "scenario": {"scene": scene or {"robots": {"robot": {"use": "robot://example/robot"}}}},
        "runtime": {"sensor_hz": 30.0, "duration_s": 1.0},
        "plugins": {"record": {"use": RECORD, "config": {"output": {"name": name}}}},
    }))
    return path


def _command(k: int, offset: float) -> ControlCommand:
    return ControlCommand(f"driver-{k}", "set_joint_offset", "robot", {"offset": offset})


def test_a_driven_episode_records_the_commands_sent_and_the_observations_returned(tmp_path: Path) -> None:
    """Each step's commands are the control audit; each step's returned sample is the recorded tick."""
    session = Session.open(prepare_run(_run(tmp_path), seed=5), tmp_path / "out")
    packing = session.backend.numeric_packing()  # type: ignore[attr-defined]
    sent: list[ControlCommand] = []
    returned: list[np.ndarray] = []
    for k in range(1, 13):
        commands = [_command(k, 0.01 * k)] if k % 3 == 0 else []
        commands += [ControlCommand(f"bad-{k}", "fly", "robot")] if k == 7 else []
        result = session.step(commands, events=[ScenePluginEvent("driver.tick", {"k": k})] if k == 4 else ())
        assert result.tick == k
        assert len(result.outcomes) == len(commands)
        if k == 7:
            assert result.outcomes[-1].accepted is False  # the refusal is visible to the driver
        sent += commands
        returned.append(np.array(result.observation, copy=True))
    outcome = session.close().outcome
    assert outcome.ok
    assert outcome.completion.kind is CompletionKind.NORMAL
    path = Path(outcome.committed[0])
    assert validate(path).validated_bytes == path.stat().st_size
    with fr.open(path) as rec:
        issued = [e.data for e in rec.control() if e.data.get("event") == "command.issued"]
        applied = [e.data for e in rec.control() if e.data.get("event") == "command.applied"]
        assert [d["command_id"] for d in issued] == [c.command_id for c in sent]
        assert [d["args"] for d in issued] == [dict(c.args) for c in sent]
        assert {d["command_id"]: d["accepted"] for d in applied}["bad-7"] is False
        assert [e.data["data"] for e in rec.events() if e.data.get("event") == "driver.tick"] == [{"k": 4}]
        recorded = rec.numeric_all()
        assert rec.info.records["observations"] == 12
    # the packed buffer the tick returned is the recorded tick, channel by channel, bit for bit
    offset = 0
    for channel, dtype, shape in packing:
        count = int(np.prod(shape, dtype=np.int64))
        width = np.dtype(dtype).itemsize * count
        expected = np.stack([r.view(np.uint8)[offset:offset + width].view(dtype).reshape(shape) for r in returned])
        np.testing.assert_array_equal(recorded[channel].values, expected)
        offset += width


def test_stepping_the_scene_script_by_hand_equals_run_session(tmp_path: Path) -> None:
    """A test that plays backend.script(t) through Session.step records what the scripted driver records."""
    scene = {"robots": {"robot": {"use": "robot://example/robot"}},
             "synthetic": {"command_every_s": 0.2, "reset_every_s": 0.5, "event_every_s": 0.3}}
    scripted = run_session(prepare_run(_run(tmp_path, "a.fsr", scene), seed=9), tmp_path / "a")
    prepared = prepare_run(_run(tmp_path, "b.fsr", scene), seed=9)
    session = Session.open(prepared, tmp_path / "b")
    for tick in range(1, 31):
        script = prepared.backend.script(tick)
        session.step(script.commands, events=script.events, reset=script.reset)
    driven = session.close()
    assert scripted.ticks == driven.ticks == 30
    with fr.open(scripted.outcome.committed[0]) as a, fr.open(driven.outcome.committed[0]) as b:
        assert a.info.generations == b.info.generations
        assert len(a.info.generations) > 1  # the script reset at least once
        for channel, series in a.numeric_all().items():
            other = b.numeric(channel)
            np.testing.assert_array_equal(series.values, other.values)
            np.testing.assert_array_equal(series.time_ns, other.time_ns)
            np.testing.assert_array_equal(series.generation, other.generation)
        assert [e.data for e in a.control()] == [e.data for e in b.control()]
        assert [e.data["data"] for e in a.events()] == [e.data["data"] for e in b.events()]


def test_a_closed_or_stopping_episode_refuses_steps(tmp_path: Path) -> None:
    """step after close, or after a completion request, raises SessionClosed; close is idempotent."""
    session = Session.open(prepare_run(_run(tmp_path), seed=1), tmp_path / "out")
    session.step()
    session.host.request_completion(CompletionKind.STOPPED, "the driver stopped")
    with pytest.raises(SessionClosed, match="stopping"):
        session.step()
    first = session.close()
    assert first.outcome.completion.kind is CompletionKind.STOPPED
    assert first.outcome.committed  # a stopped episode commits what it recorded
    assert session.close() is first
    with pytest.raises(SessionClosed):
        session.step()


def test_a_backend_failure_in_a_step_fails_the_episode_and_is_re_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception inside the backend requests a failed completion; the driver sees the exception."""
    prepared = prepare_run(_run(tmp_path), seed=1)
    session = Session.open(prepared, tmp_path / "out")
    session.step()

    def broken(self: object, substeps: int) -> None:
        raise RuntimeError("the physics blew up")

    monkeypatch.setattr(type(prepared.backend), "step", broken)
    with pytest.raises(RuntimeError, match="blew up"):
        session.step()
    outcome = session.close().outcome
    assert outcome.completion.kind is CompletionKind.FAILED
    assert "tick 2" in outcome.completion.reason


def test_reset_ends_the_run_and_opens_the_next_episode_with_the_seed(tmp_path: Path) -> None:
    """reset(seed) commits the open Run (stopped) and steps the next episode, prepared with that seed."""
    session = Session.open(prepare_run(_run(tmp_path), seed=5), tmp_path / "out")
    for k in range(1, 4):
        assert session.step([_command(k, 0.01)]).tick == k
    session.reset(seed=7)
    assert session.prepared.seed == 7
    assert session.prepared.episode == 1
    first = session.previous[0]
    assert first.outcome.completion.kind is CompletionKind.STOPPED
    assert first.ticks == 3
    assert [session.step().tick for _ in range(4)] == [1, 2, 3, 4]  # a new Run: its ticks restart
    second = session.close()
    assert second.outcome.ok
    assert second.ticks == 4
    paths = [Path(first.outcome.committed[0]), Path(second.outcome.committed[0])]
    assert [p.name for p in paths] == ["stepped.fsr", "stepped-00001.fsr"]
    for path, seed, ticks in zip(paths, (5, 7), (3, 4), strict=True):
        assert validate(path).validated_bytes == path.stat().st_size
        with fr.open(path) as rec:
            assert rec.info.records["observations"] == ticks
        with FsrReader(path) as reader:
            assert reader.run.attributes["run"]["seed"] == seed
    with pytest.raises(SessionClosed):
        session.step()
