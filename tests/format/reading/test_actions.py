"""rec.actions(), segments() (episodes() deprecated), and the Dataset's action key, seconds windows and dtype:
each read back from real recordings and compared with what was commanded."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_recording_format.reading import BadArgument, UnknownName

JOINTS = "robot.joint_position"


def _audit(seg: fr.Segment) -> tuple[np.ndarray, np.ndarray]:
    issued = [e for e in seg.control() if e.stream == "control.audit"]
    return np.array([e.time_ns for e in issued]), np.array([e.data["args"]["targets"] for e in issued])


def test_scripted_actions_are_the_commands_issued_after_each_observation(droid_fsr: Path) -> None:
    """Row k is the command audited in tick k + 1 of the same segment; each segment's last row is NaN, not issued."""
    with fr.open(droid_fsr) as rec:
        acts = rec.actions()
        ticks = rec.numeric(JOINTS)
        assert acts.command == "robot.set_joint_targets"
        assert acts.names == (*(f"joint{k}" for k in range(1, 8)), "finger_joint")
        assert acts.units == ("rad",) * 8
        np.testing.assert_array_equal(acts.time_ns, ticks.time_ns)
        np.testing.assert_array_equal(acts.generation, ticks.generation)
        for seg in rec.segments():
            rows = np.flatnonzero(acts.generation == seg.generation)
            at, targets = _audit(seg)
            times = ticks.time_ns[rows]
            for k, row in enumerate(rows[:-1].tolist()):
                np.testing.assert_array_equal(acts.values[row], targets[at == times[k + 1]][0])
            assert acts.issued[rows].tolist() == [True] * (len(rows) - 1) + [False]
            assert np.isnan(acts.values[rows[-1]]).all()
            assert (acts.accepted == acts.issued).all()
            mine = seg.actions()  # a segment's own view gives its rows
            np.testing.assert_array_equal(mine.values, acts.values[rows])


def test_segments_and_the_deprecated_names(droid_fsr: Path) -> None:
    """segments()/segment()/Segment are the names; episodes()/episode()/Episode still work and warn."""
    with fr.open(droid_fsr) as rec:
        segs = rec.segments()
        assert [s.generation for s in segs] == [0, 1]
        assert isinstance(segs[1], fr.Segment)
        assert repr(rec.segment(1)) == f"Segment({str(droid_fsr)!r}, generation=1)"
        with pytest.warns(DeprecationWarning, match=r"episodes\(\) is deprecated: use Recording.segments\(\)"):
            old = rec.episodes()
        assert [s.generation for s in old] == [0, 1]
        with pytest.warns(DeprecationWarning, match=r"use Recording.segment\(\)"):
            assert rec.episode(1).generation == 1
        with pytest.warns(DeprecationWarning, match="Episode is deprecated: use Segment"):
            assert fr.Episode is fr.Segment
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rec.segments()


def test_a_file_without_commands_and_bad_command_names(synthetic_fsr: Path) -> None:
    """The synthetic script's set_joint_offset is its one vector command; an unknown name lists what exists."""
    with fr.open(synthetic_fsr) as rec:
        acts = rec.actions()
        assert acts.command == "robot.set_joint_offset"
        assert acts.names == ("offset[0]",)
        offsets = [(e.time_ns, e.generation, e.data["args"]["offset"]) for e in rec.control()
                   if e.stream == "control.audit"]
        assert int(acts.issued.sum()) == len(offsets) == 3
        for t, g, value in offsets:  # each is the action of the observation just before it
            row = int(np.flatnonzero((acts.generation == g) & (acts.time_ns < t))[-1])
            assert acts.values[row, 0] == value
        with pytest.raises(UnknownName, match=r"unknown command 'robot\.nope'.*robot\.set_joint_offset"):
            rec.actions("robot.nope")


def test_refused_commands_keep_their_values_and_are_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FastSimRun-v0 episode with one refused step: its row holds what was commanded, accepted false."""
    pytest.importorskip("gymnasium")
    from tests.host.gym.conftest import reach_run

    from fastsim_embedded.backends.base import ControlOutcome
    from fastsim_embedded.backends.synthetic import SyntheticBackend
    from fastsim_embedded.gym import FastSimRunEnv

    env = FastSimRunEnv(reach_run(tmp_path, duration_s=2.0), tmp_path / "out")
    env.reset(seed=1)
    sent = [np.full(7, 0.1), np.full(7, -0.2), np.full(7, 0.3)]
    env.step(sent[0])
    original = SyntheticBackend.apply_control
    monkeypatch.setattr(SyntheticBackend, "apply_control", lambda self, command: ControlOutcome(False, {"error": "x"}))
    assert env.step(sent[1])[-1]["refused"] == ["gym-3"]
    monkeypatch.setattr(SyntheticBackend, "apply_control", original)
    env.step(sent[2])
    env.close()
    path = Path(env.committed[0])
    with fr.open(path) as rec:
        acts = rec.actions()
    assert len(acts) == 4  # the reset observation and three steps
    np.testing.assert_array_equal(acts.values[:3], np.array(sent))
    assert np.isnan(acts.values[3]).all()
    assert acts.issued.tolist() == [True, True, True, False]
    assert acts.accepted.tolist() == [True, False, True, False]
    # the Dataset serves the same rows as the key "action", windowed in seconds (30 Hz ticks) and float32
    ds = fr.Dataset(path, channels=[JOINTS], action=True, window={"action": {"seconds": [0, 1 / 30]}},
                    dtype="float32", include="stopped")
    assert len(ds) == 4
    s = ds[1]
    assert s["action"].dtype == np.float32 == s[JOINTS].dtype
    np.testing.assert_array_equal(s["action"], np.array(sent[1:3], np.float32))
    assert s["action_accepted"].tolist() == [False, True]
    assert s["action_is_pad"].tolist() == [False, False]
    assert s[JOINTS].shape == (1, 7)  # keys left out of the mapping get [0]
    last = ds[3]
    assert last["action_is_pad"].tolist() == [True, True]  # nothing followed it; then outside the segment
    plain = fr.Dataset(path, channels=[JOINTS], action=True, include="stopped")
    np.testing.assert_array_equal(plain[2]["action"], sent[2])
    assert plain[2]["action"].dtype == np.float64
    assert not plain[2]["action_is_pad"]
    assert plain[2]["action_accepted"]


def test_seconds_windows_match_tick_windows_and_reject_fractions(synthetic_fsr: Path) -> None:
    """At 120 Hz, seconds [-1/60, 0, 0.1] are ticks [-2, 0, 12]; 0.005 s is no whole tick: one clear line."""
    by_ticks = fr.Dataset(synthetic_fsr, channels=[JOINTS], window=[-2, 0, 12])
    by_seconds = fr.Dataset(synthetic_fsr, channels=[JOINTS], window={JOINTS: {"seconds": [-1 / 60, 0, 0.1]}})
    for i in (0, 1, 30, 50, 59, 60, 100, 179):
        a, b = by_ticks[i], by_seconds[i]
        np.testing.assert_array_equal(a[JOINTS], b[JOINTS])
        np.testing.assert_array_equal(a[f"{JOINTS}_is_pad"], b[f"{JOINTS}_is_pad"])
    with pytest.raises(BadArgument, match=r"0.005 s is not a whole number of ticks .*tick period 8.333 ms"):
        fr.Dataset(synthetic_fsr, channels=[JOINTS], window={JOINTS: {"seconds": [0, 0.005]}})[0]
    with pytest.raises(BadArgument, match=r"must be a sequence of tick offsets, \{'ticks'"):
        fr.Dataset(synthetic_fsr, channels=[JOINTS], window={JOINTS: {"minutes": [1]}})
    with pytest.raises(BadArgument, match="dtype must be a floating dtype"):
        fr.Dataset(synthetic_fsr, channels=[JOINTS], dtype="int8")
    with pytest.raises(UnknownName, match="unknown window key 'action'"):
        fr.Dataset(synthetic_fsr, channels=[JOINTS], window={"action": [0]})
