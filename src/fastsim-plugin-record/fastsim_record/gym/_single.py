"""``RecordEpisodes``: a ``gymnasium.Wrapper`` that records every episode into one sealed FSR file.

    | # | call                  | recorded                                                          |
    |---|-----------------------|-------------------------------------------------------------------|
    | 1 | ``reset(seed, options)`` | an open episode ends as truncated; a new one starts with the    |
    |   |                       | reset observation (and frame).  No seed: one is drawn, passed to  |
    |   |                       | the env and recorded                                              |
    | 2 | ``step(action)``      | one row: observation t, action t, reward, flags; the episode ends |
    |   |                       | (and commits, off the env thread) on ``terminated or truncated``. |
    |   |                       | The last step's frame is published while this one renders        |
    | 3 | the env raises        | the open episode commits what it recorded, completion ``failed``  |
    |   |                       | with the exception's one line; the exception reaches the caller   |
    |   |                       | (a value outside its own space: the same, as ``GymWrapError``)    |
    | 4 | ``render()``          | the frame already captured for this step (never rendered twice)   |
    | 5 | ``close()``           | an open episode ends as truncated; waits for every commit;        |
    |   |                       | ``files`` lists what was written                                  |
"""

from __future__ import annotations

import os
import random
import secrets
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import gymnasium as gym

from fastsim_contract.values import CompletionKind
from fastsim_record.gym._gl import CurrentContext
from fastsim_record.gym._host import GymWrapError, gym_host
from fastsim_record.gym._options import check_directory, describe, host_options

__all__ = ["EXIT_REASON", "RecordEpisodes", "commit_at_exit", "draw_seed", "env_call", "env_step", "open_recording", "warn_uncommitted"]


def warn_uncommitted(files: list[Any]) -> None:
    """One warning line per episode that could not be committed (its file is not there)."""
    for file in files:
        if file.path is None:
            warnings.warn(f"episode {file.episode}: not committed: {file.reason}", RuntimeWarning, stacklevel=3)


_SEEDS = random.Random(secrets.randbits(128))  # one system draw per process, not one syscall per reset
# a forked child draws its own seeds: processes forked from one parent never repeat each other's episodes
os.register_at_fork(after_in_child=lambda: _SEEDS.seed(secrets.randbits(128)))


# Two exit paths, both before the interpreter stops starting threads (Python >= 3.12
# refuses new threads once its shutdown has begun, and a commit may need one):
# - an uncaught exception (Ctrl-C's KeyboardInterrupt included) reaches ``sys.excepthook``
#   while the interpreter still runs: the hook commits first, then reports as before;
# - a normal exit without ``close()`` runs threading's exit hooks before the interpreter
#   joins its threads, newest first: before concurrent.futures' own, so the commit threads
#   still take work (on 3.12 an episode not opened yet then cannot be: a warning says so).
_register_atexit: Callable[[Callable[[], None]], None] = getattr(threading, "_register_atexit")  # noqa: B009

EXIT_REASON = "truncated: the interpreter exited before close()"

_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()  # wrappers whose recording is not closed yet


def _commit_open() -> None:
    """Commit every wrapper's open episodes (``EXIT_REASON``), once each."""
    for wrapper in list(_OPEN):
        wrapper.close_recording(EXIT_REASON)


def _chained(previous: Callable[..., Any]) -> Callable[..., Any]:
    """``sys.excepthook`` that commits the open episodes, then calls ``previous``."""
    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        try:
            _commit_open()
        finally:
            previous(kind, value, tb)

    excepthook.commits_open_episodes = True  # type: ignore[attr-defined]
    return excepthook


_register_atexit(_commit_open)


def commit_at_exit(wrapper: Any) -> None:
    """When the interpreter exits before ``wrapper.close()`` (Ctrl-C, an exception, a forgotten
    ``close()``), its open episodes are committed as ``close()`` commits them (``EXIT_REASON``),
    not left ``.incomplete``; the env itself is left to its own exit."""
    _OPEN.add(wrapper)
    if not getattr(sys.excepthook, "commits_open_episodes", False):  # installed once, chained
        sys.excepthook = _chained(sys.excepthook)


def draw_seed() -> int:
    """A fresh seed for a reset that gave none (recorded with the episode)."""
    return _SEEDS.randrange(2**31)


def env_call(recording: Any, call: Callable[..., Any], capture: Callable[[], Any], *args: Any,
             **kwargs: Any) -> tuple[Any, Any]:
    """``call(*args, **kwargs)`` (the env's ``reset``), then ``capture()`` (its frames): an
    exception in either ends the recording as failed, then propagates."""
    try:
        return call(*args, **kwargs), capture()
    except Exception as exc:
        recording.fail(exc)
        raise


def env_step(recording: Any, env: Any, capture: Callable[[], Any] | None, action: Any) -> tuple[Any, Any]:
    """``env.step(action)``, then ``capture()`` (its frames; ``None``: none) once the frames held
    since the last step are released to their publishers (``release``: they publish while the env
    renders): ``env_call``'s rule for ``RecordVectorEpisodes.step`` without the keyword packing
    (``RecordEpisodes.step``, the cheapest env's hot path, spells it inline)."""
    try:
        result = env.step(action)
        if capture is None:
            return result, None
        recording.release()
        return result, capture()
    except Exception as exc:
        recording.fail(exc)
        raise


def open_recording(
    env: Any, directory: str | Path, options: dict[str, object], *, sub_envs: list[Any], vector: bool,
    observation_space: Any, action_space: Any,
) -> Any:
    """The host's recording for ``env`` (``GymWrapError``: one line, nothing recorded)."""
    host = gym_host()
    prefix = options.get("prefix", "episode")
    path, first = check_directory(directory, prefix if isinstance(prefix, str) else "episode",
                                  resume=bool(options.get("resume", False)))
    opts = {k: v for k, v in options.items() if k != "resume"}
    hopts = host_options(host, env, opts, num_envs=len(sub_envs), first=first)
    if hopts.cameras and getattr(env, "render_mode", None) != "rgb_array":
        hopts = attrs.evolve(hopts, cameras=False)  # no frames to record
    sub = next((e for e in sub_envs if e is not None), None)
    try:
        recording = host.open(path, observation_space, action_space, sub_envs, describe(env, sub_env=sub), hopts,
                              vector=vector)
    except ValueError as exc:  # an unmappable space, named by its path
        raise GymWrapError(str(exc).splitlines()[0]) from None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        recording.close()
        raise GymWrapError(f"{path}: cannot create the directory: {exc.strerror}") from None
    return recording


class RecordEpisodes(gym.Wrapper[Any, Any, Any, Any]):
    """Record every episode of ``env`` into ``directory`` (module table; options: ``_options``)."""

    def __init__(self, env: gym.Env[Any, Any], directory: str | Path, **options: object) -> None:
        super().__init__(env)
        self._recording = open_recording(
            env, directory, dict(options), sub_envs=[env], vector=False,
            observation_space=env.observation_space, action_space=env.action_space,
        )
        self._frame: Any = None
        self._gl = CurrentContext()
        self._step_frame = self._capture if self._recording.wants_render(0) else None  # fixed: asked once
        self.files: list[Any] = []
        self._committed = False
        commit_at_exit(self)

    def _capture(self) -> Any:
        if self._step_frame is None:
            self._frame = None
            return None
        # Gymnasium's MuJoCo viewer makes its GL context current only when created; make it
        # current again when it is not, or a context freed on this thread since leaves frames
        # black (``_gl``: asked of libEGL, not made current every frame).
        viewer = getattr(getattr(self.env.unwrapped, "mujoco_renderer", None), "viewer", None)
        if viewer is not None:
            self._gl.ensure(viewer)
        self._frame = self.env.render()
        return self._frame

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Row 1 of the module table."""
        if self._recording.is_open(0):
            self._recording.end(0, CompletionKind.STOPPED, "truncated: reset() started a new episode")
        used = draw_seed() if seed is None else seed
        (observation, info), frame = env_call(self._recording, self.env.reset, self._capture,
                                              seed=used, options=options)
        try:
            self._recording.begin(0, used, options, observation, frame)
        except ValueError as exc:  # the env's value does not fit its own space
            raise GymWrapError(f"reset(): {exc}".splitlines()[0]) from None
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Row 2 (and 3) of the module table."""
        try:  # env_step's rule, inline: the single env's hot path (a call less per step)
            result = self.env.step(action)
            observation, reward, terminated, truncated, info = result
            if self._step_frame is not None:  # the last frame goes to the publisher as this one renders
                self._recording.release()
                frame = self._step_frame()
            else:
                frame = None
        except Exception as exc:
            self._recording.fail(exc)
            raise
        try:
            self._recording.step(0, action, observation, reward, terminated, truncated, info, frame)
        except ValueError as exc:  # what was recorded is committed; the channel is named
            raise GymWrapError(f"step(): {exc}".splitlines()[0]) from None
        return result  # the env's own tuple, as the env returned it

    def render(self) -> Any:
        """Row 4: the captured frame, else the env's own ``render()``."""
        return self._frame if self._frame is not None else self.env.render()

    def close_recording(self, reason: str = "truncated: the env was closed") -> None:
        """Commit every open episode (``reason``) and wait for every commit, once: ``files``."""
        if not self._committed:
            self._committed = True
            self.files = self._recording.close(reason)
            warn_uncommitted(self.files)

    def close(self) -> None:
        """Row 5."""
        self.close_recording()
        super().close()
