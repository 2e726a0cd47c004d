"""The writer pool: the env thread never waits for a commit while the pool has room, waits
(counted) when it has none, the number of open episode files is bounded whatever the number of
sub-envs, and a commit that fails is reported by ``close()``.  Counted, never timed."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.vector import AutoresetMode
from tests.record.gym.play import Played, assert_recorded, play

from fastsim_embedded.gymnasium_host import episode as episode_module
from fastsim_embedded.session import session
from fastsim_record.gym import RecordEpisodes, RecordVectorEpisodes


def _gated_finish(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[int]]:
    """Every commit waits for ``gate``; ``done`` lists the episodes whose commit went through."""
    real = episode_module.EpisodeWriter.finish
    gate, done = threading.Event(), []

    def finish(self: Any, *args: Any, **kwargs: Any) -> Any:
        assert gate.wait(120), "the gate was never opened"
        result = real(self, *args, **kwargs)
        done.append(self.number)
        return result

    monkeypatch.setattr(episode_module.EpisodeWriter, "finish", finish)
    return gate, done


def test_the_env_thread_never_waits_for_a_commit_while_the_pool_has_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Five episodes end with every commit held back (writers=4): no step waits; then all commit."""
    gate, done = _gated_finish(monkeypatch)
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path, writers=4, durable=False)
    played = play(env, [0, 1, 2, 3, 4])
    recording = env._recording
    assert (done, recording.flow_waits) == ([], 0)  # every episode ended; none has been committed yet
    gate.set()
    env.close()
    assert sorted(done) == [0, 1, 2, 3, 4]
    for file, episode in zip(env.files, played, strict=True):
        assert_recorded(file.path, episode)


def test_when_the_pool_is_full_the_env_thread_waits_and_counts_it_never_drops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """writers=1: the third finished episode waits for a commit (counted); every episode commits."""
    gate, _ = _gated_finish(monkeypatch)
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path, writers=1, durable=False)
    recording = env._recording

    def open_when_waiting() -> None:
        deadline = time.monotonic() + 120
        while recording.flow_waits == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.set()

    watcher = threading.Thread(target=open_when_waiting)
    watcher.start()
    played = play(env, [0, 1, 2, 3])
    watcher.join()
    env.close()
    assert recording.flow_waits >= 1
    assert [f.path is not None for f in env.files] == [True] * 4
    for file, episode in zip(env.files, played, strict=True):
        assert_recorded(file.path, episode)


def test_open_episode_files_stay_bounded_with_16_sub_envs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """16 CartPole sub-envs, writers=2: at most 4 episode files are open at once; all commit."""
    count = _count_open_sessions(monkeypatch)
    vector = gym.make_vec("CartPole-v1", num_envs=16, vectorization_mode="sync",
                          vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    envs = RecordVectorEpisodes(vector, tmp_path, writers=2)
    envs.action_space.seed(0)
    envs.reset(seed=0)
    threads = threading.active_count()
    for _ in range(120):
        envs.step(envs.action_space.sample())
        threads = max(threads, threading.active_count())
    pool = envs._recording.pool
    envs.close()
    assert len(envs.files) > 60
    assert all(f.path is not None for f in envs.files)
    assert pool.spills == 0
    assert count["peak"] <= 2 * 2, count  # before the pool: one open file per sub-env (16 and more)
    assert count["now"] == 0
    assert threads <= 40  # not one Record worker per sub-env


def _count_open_sessions(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """``now`` and ``peak``: Sessions (episode files) open at once."""
    real_open, real_close = session.Session.open.__func__, session.Session.close  # type: ignore[attr-defined]
    lock, count = threading.Lock(), {"now": 0, "peak": 0}

    def counted_open(cls: Any, /, *args: Any, **kwargs: Any) -> Any:
        opened = real_open(cls, *args, **kwargs)
        with lock:
            count["now"] += 1
            count["peak"] = max(count["peak"], count["now"])
        return opened

    def counted_close(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return real_close(self, *args, **kwargs)
        finally:
            with lock:
                count["now"] -= 1

    monkeypatch.setattr(session.Session, "open", classmethod(counted_open))
    monkeypatch.setattr(session.Session, "close", counted_close)
    return count


@pytest.mark.parametrize("camera", [False, True], ids=["numeric", "frames"])
def test_long_episodes_without_a_slot_spill_to_disk_and_never_open_beyond_the_slots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, camera: bool,
) -> None:
    """8 sub-envs, writers=2, long episodes: those without a slot spill, at most 4 files open, all exact."""
    # Before: each episode past its kept rows opened its file anyway (6 overflows, 8 files
    # open at once).  Queued rows stay bounded and the spill folder is gone after close().
    monkeypatch.setattr(episode_module, "MAX_PENDING_ROWS", 256)
    count = _count_open_sessions(monkeypatch)
    steps, n = (60 if camera else 700), 8
    kwargs: dict[str, Any] = {"max_episode_steps": steps}
    if camera:  # frames of the last sub-env only: its episode keeps 16 rows (media_queue_items), not 256
        kwargs.update(render_mode="rgb_array")
    vector = gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1", **kwargs)] * n,
                                      autoreset_mode=AutoresetMode.NEXT_STEP)
    envs = RecordVectorEpisodes(vector, tmp_path, writers=2, **({"camera_envs": (7,)} if camera else {}))
    envs.action_space.seed(0)
    observation, _ = envs.reset(seed=list(range(n)))
    played = [Played(i, [observation[i]]) for i in range(n)]
    queued_peak = 0
    for _ in range(steps):
        action = envs.action_space.sample()
        observation, reward, terminated, truncated, _ = envs.step(action)
        for i in range(n):
            played[i].step(action[i], observation[i], reward[i], terminated[i], truncated[i])
        queued_peak = max([queued_peak, *(w._queued for w in envs._recording._open.values())])
    pool = envs._recording.pool
    spill_folder = pool.spill.path
    envs.close()
    assert pool.spills == (1 if camera else n - 2)  # frames: only the camera episode outlives its 16 rows
    assert spill_folder is not None
    assert not spill_folder.exists()
    assert not list(tmp_path.glob(".fsr-spill-*"))
    assert count["peak"] <= 2 * 2, count  # before: one open file per sub-env
    assert queued_peak <= 256 + 128, queued_peak  # the bound, plus at most one handed chunk
    files = sorted(envs.files, key=lambda f: f.sub_env)
    assert [f.sub_env for f in files] == list(range(n))
    for file, episode in zip(files, played, strict=True):
        assert file.completion == "normal", file
        assert_recorded(file.path, episode)


def test_close_reports_a_commit_that_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Episode 1's commit raises: close() warns one line naming it; episodes 0 and 2 commit."""
    real_close = session.Session.close

    def failing_close(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = real_close(self, *args, **kwargs)
        if self.prepared.episode == 1:
            raise OSError("disk full while sealing")
        return result

    monkeypatch.setattr(session.Session, "close", failing_close)
    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path)
    played = play(env, [0, 1, 2])
    with pytest.warns(RuntimeWarning, match=r"^episode 1: not committed: OSError: disk full while sealing$") as seen:
        env.close()
    assert len([w for w in seen if "not committed" in str(w.message)]) == 1
    assert [f.path is not None for f in env.files] == [True, False, True]
    assert_recorded(env.files[0].path, played[0])
    assert_recorded(env.files[2].path, played[2])


def test_a_spill_that_fails_drops_that_episodes_rows_once_and_counts_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The disk refuses one spill: that episode stops with its line, the others are exact, ``spills`` counts it once."""
    # audit40: the env never waits forever; ``spills`` counted the episode again on every
    # refill of its kept rows after the failure.
    from fastsim_embedded.gymnasium_host import spill

    monkeypatch.setattr(episode_module, "MAX_PENDING_ROWS", 64)
    real, calls = spill.SpillFile.append, [0]

    def append(self: Any, chunk: Any) -> None:
        calls[0] += 1
        if calls[0] == 2:
            raise OSError(28, "No space left on device")
        real(self, chunk)

    monkeypatch.setattr(spill.SpillFile, "append", append)
    n, steps = 3, 600
    vector = gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1", max_episode_steps=steps)] * n,
                                      autoreset_mode=AutoresetMode.NEXT_STEP)
    envs = RecordVectorEpisodes(vector, tmp_path, writers=1)
    envs.action_space.seed(0)
    observation, _ = envs.reset(seed=list(range(n)))
    played = [Played(i, [observation[i]]) for i in range(n)]
    for _ in range(steps):
        action = envs.action_space.sample()
        observation, reward, terminated, truncated, _ = envs.step(action)
        for i in range(n):
            played[i].step(action[i], observation[i], reward[i], terminated[i], truncated[i])
    pool = envs._recording.pool
    envs.close()
    assert pool.spills == n - 1  # sub-envs 1 and 2 waited for the one slot
    files = sorted(envs.files, key=lambda f: f.sub_env)
    failed = [f for f in files if f.completion != "normal"]
    assert len(failed) == 1
    assert failed[0].reason == "failed: spilling failed: OSError: [Errno 28] No space left on device"
    for file in files:
        if file.completion == "normal":
            assert_recorded(file.path, played[file.sub_env])
    assert not list(tmp_path.glob(".fsr-spill-*"))
