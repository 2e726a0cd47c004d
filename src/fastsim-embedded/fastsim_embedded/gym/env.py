"""``FastSimRun-v0``: a FastSim Run as a Gymnasium environment, recorded by Record.

    import gymnasium as gym
    env = gym.make("fastsim_embedded.gym:FastSimRun-v0", run="examples/policy/run.yaml",
                   output_dir="out/policy")
    obs, info = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

Importing this module registers ``FastSimRun-v0`` (so the ``module:id`` form needs no
other import).  Keyword arguments:

    | # | kwarg        | default   | meaning                                                     |
    |---|--------------|-----------|-------------------------------------------------------------|
    | 1 | run          | required  | a Run file, a loaded ``RunDocument`` or a ``CompiledRun``   |
    | 2 | output_dir   | "."       | where Record commits each episode                           |
    | 3 | cameras      | False     | observations also carry each camera's RGB image             |
    | 4 | record       | True      | False: the Run without its Record plugin (nothing written)  |
    | 5 | max_steps    | none      | truncate after this many steps (besides the Run's duration) |
    | 6 | env_index    | auto      | the sub-env index in file names (auto: ``env_slot``)        |
    | 7 | overwrite    | False     | replace existing episode files instead of skipping numbers  |
    | 8 | backend_options | none   | the backend's knobs (as ``fsr record --backend-option``)    |
    | 9 | render_mode  | None      | ``"rgb_array"``: ``render()`` returns the latest frame of   |
    |   |              |           | the scene's first camera (the Run's recorded camera first)  |

Episodes (one ``fastsim_embedded.session.session.Session`` each, one committed file each):

    | # | call           | what happens                                                        |
    |---|----------------|---------------------------------------------------------------------|
    | 1 | reset(seed)    | the open episode is committed (``stopped``: abandoned); a new one   |
    |   |                | is prepared with ``seed`` (default: the Run's seed, then a draw    |
    |   |                | from ``np_random``, so the sub-envs of a vector env seeded s, s+1, |
    |   |                | ... never share a seed) and episode number n, and opened; its      |
    |   |                | first tick runs                                                    |
    |   |                | without a command and is the returned observation                   |
    | 2 | step(action)   | the action is checked (``ValueError`` naming element and bound,     |
    |   |                | nothing sent), sent as the scene's command through Core's audited  |
    |   |                | control path (control audit + result), one tick runs               |
    | 3 | terminated     | the task succeeded or failed: the episode commits ``normal`` now   |
    | 4 | truncated      | the Run's duration (ticks), ``max_steps`` or ``gym.make``'s        |
    |   |                | ``max_episode_steps``: commits ``normal``                           |
    | 5 | close()        | commits the open episode ``stopped``; later calls raise             |

File names: the Run's output template rendered with the episode number (a name without
fields gets ``-{episode:05d}``) and ``-env<k>`` before the extension, ``k`` the sub-env
index, so sub-envs and processes never collide (``env_slot``).  ``info`` carries
``tick``, ``seed``, ``control`` (each command's ``command_id``, ``accepted``,
``detail``), ``refused`` (the ids of refused commands), the task's ``success``,
``failure`` and ``return`` (the episode's return as Record writes it: the sum of the
rewards ``step()`` returned; the reset tick's ``task.reward`` row is not a step), and ``committed``
(paths) once the episode has ended.

An exception inside the scene or a publisher during ``step`` fails the episode (nothing
under a final name, as ``fsr record``) and is re-raised; ``step`` then asks for ``reset``.
KeyboardInterrupt inside ``step`` commits the episode ``stopped`` (interrupted by the
operator) and re-raises; an exception in user code between steps leaves the episode
open, and ``close()`` or the interpreter's exit (a ``weakref.finalize``) commits it
``stopped``.  ``kill -9`` leaves the usual recoverable ``.incomplete`` (``fsr recover``).

``gym.make(..., max_episode_steps=N)`` puts Gymnasium's ``TimeLimit`` around the
environment, which truncates outside it and keeps N out of the environment's own spec.
The registration's one additional wrapper entry (``notice_time_limit``), which
``gym.make`` applies after ``TimeLimit``, reads N from the made stack's
``spec.max_episode_steps`` (``TimeLimit.spec`` sets it) into ``time_limit``, and
returns the stack unchanged: the episode then commits ``normal`` at step N, reason
``max_episode_steps after N steps``, as with ``max_steps`` (a later ``step`` asks for
``reset``).  A ``TimeLimit`` applied by hand, or a stack re-made from ``env.spec`` (whose
``additional_wrappers`` no longer name the entry), is not seen: pass ``max_steps=N``.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import os
import signal
import threading
import weakref
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import WrapperSpec

from fastsim_contract.run import RunDocument
from fastsim_contract.run_compiler import CompiledRun
from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import ControlCommand, ControlSpec
from fastsim_embedded.gym.document import run_document, without_plugins
from fastsim_embedded.gym.render import RenderView
from fastsim_embedded.gym.slots import EnvSlot, claim_slot
from fastsim_embedded.gym.spaces import (
    REWARD_CHANNEL,
    ObservationReader,
    action_space,
    commands_for,
    observation_space,
)
from fastsim_embedded.output.transaction import OutputRefused
from fastsim_embedded.session.compile import PreparedRun, prepare_run
from fastsim_embedded.session.loop import TickResult, tick_count
from fastsim_embedded.session.metadata import task_of
from fastsim_embedded.session.session import Session

__all__ = ["ENV_ID", "FastSimRunEnv", "notice_time_limit"]

ENV_ID = "FastSimRun-v0"
_SIGINT = int(signal.SIGINT)
_MAX_SKIPPED = 10_000  # episode numbers skipped past existing files before giving up


class _Open:
    """The open episode, shared with the finaliser (which must not hold the env)."""

    def __init__(self) -> None:
        self.episode: Session | None = None

    def commit(self, kind: CompletionKind, reason: str) -> tuple[str, ...]:
        episode, self.episode = self.episode, None
        if episode is None:
            return ()
        with _HeldInterrupt() as held:  # a commit is never cut short: Ctrl-C comes after it
            committed = tuple(str(p) for p in episode.close(kind, reason).outcome.committed)
        if held.interrupted:
            raise KeyboardInterrupt
        return committed


def _abandon(open_: _Open, slot: EnvSlot) -> None:
    """The finaliser: commit an open episode ``stopped`` and free the slot."""
    try:
        open_.commit(CompletionKind.STOPPED, "the environment was never closed (finalised at exit)")
    finally:
        slot.release()


class FastSimRunEnv(gym.Env[dict[str, np.ndarray], Any]):
    """A Run driven step by step; see the module docstring."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"]}  # noqa: RUF012 - Gymnasium's class attribute

    def __init__(
        self,
        run: str | os.PathLike[str] | RunDocument | CompiledRun,
        output_dir: str | os.PathLike[str] = ".",
        cameras: bool = False,
        *,
        record: bool = True,
        max_steps: int | None = None,
        env_index: int | None = None,
        overwrite: bool = False,
        backend_options: dict[str, object] | None = None,
        render_mode: str | None = None,
    ) -> None:
        document = run_document(run)
        self._document = document if record else without_plugins(document)
        self.output_dir = Path(output_dir)
        self.cameras = cameras
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"FastSimRun-v0: render_mode must be None or 'rgb_array' (got {render_mode!r})")
        self.render_mode = render_mode
        self.max_steps = max_steps
        self.overwrite = overwrite
        self._options = dict(backend_options or {})
        probe = prepare_run(document, backend_options=self._options)
        try:
            self._describe(probe)
        finally:
            probe.backend.close()
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.slot = claim_slot(self.output_dir, document.name, env_index)
        self.env_index = self.slot.index
        self._open = _Open()
        self._finaliser = weakref.finalize(self, _abandon, self._open, self.slot)
        self._episode_number = 0
        self._seed: int | None = None
        self._done = False
        self._closed = False
        self._steps = 0
        self._reader: ObservationReader | None = None
        self._view = RenderView(self._render_channel, self._render_shape) if render_mode else None
        #: the ``max_episode_steps`` of the ``TimeLimit`` that ``gym.make`` put around this
        #: env (``notice_time_limit``); ``None``: no such ``TimeLimit``
        self.time_limit: int | None = None
        #: every file this env committed, in order
        self.committed: list[str] = []

    def _describe(self, probe: PreparedRun) -> None:
        declared = {c.name: c for c in probe.channels}
        selected = probe.capture.observation_channels or tuple(c.name for c in probe.channels if c.kind == "numeric")
        numeric = [declared[n] for n in selected if n != REWARD_CHANNEL]
        images = [c for c in probe.channels if c.kind == "rgb"] if self.cameras else []
        if self.cameras and not images:
            raise ValueError(f"cameras=True, but the Run's scene ({probe.backend_name}) declares no camera")
        planned = {c.rgb for c in probe.capture.cameras}
        if planned:
            images = [c for c in images if c.name in planned]
        controls = getattr(probe.backend, "controls", None)
        self.controls: tuple[ControlSpec, ...] = tuple(controls()) if callable(controls) else ()
        if not self.controls:
            raise ValueError(f"the Run's scene ({probe.backend_name}) declares nothing a driver may control")
        self.observation_space = observation_space(numeric, images)  # type: ignore[assignment]
        self.action_space = action_space(self.controls)
        #: channel -> element names and units, as ``fsr channels`` prints them
        self.channel_info = {
            c.name: {"element_names": _names(c.attributes.get("element_names")), "units": list(c.units)}
            for c in [*numeric, *images]
        }
        self._observed = ([c.name for c in numeric], [c.name for c in images])
        self._shapes = {c.name: tuple(c.shape) for c in images}
        self._ticks = tick_count(probe.duration_s, probe.sensor_hz)
        rgb = [c for c in probe.channels if c.kind == "rgb"]
        rgb.sort(key=lambda c: c.name not in planned)  # the Run's recorded camera first
        if self.render_mode and not rgb:
            raise ValueError(f"render_mode='rgb_array', but the Run's scene ({probe.backend_name}) declares no camera")
        self._render_channel, self._render_shape = (rgb[0].name, tuple(rgb[0].shape)) if rgb else ("", ())
        self.metadata = {"render_modes": ["rgb_array"] if rgb else [], "render_fps": probe.sensor_hz}

    # -- Gymnasium API ---------------------------------------------------------------

    @property
    def episode(self) -> Session | None:
        """The open episode (``None`` between a committed episode and the next reset)."""
        return self._open.episode

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Commit the open episode, open the next (module table row 1)."""
        if self._closed:
            raise RuntimeError("FastSimRun-v0: reset() after close(); make a new environment")
        super().reset(seed=seed)
        if self._open.episode is not None:
            kind = CompletionKind.NORMAL if self._done else CompletionKind.STOPPED
            self.committed += self._open.commit(kind, f"abandoned by reset() after {self._steps} steps")
        if seed is None:  # the Run's seed first, then draws from the env's seeded generator
            seed = (self._document.runtime.seed or 0) if self._seed is None else int(self.np_random.integers(2**31))
        self._seed = seed
        episode = self._open_episode(seed)
        self._open.episode = episode
        self._done = False
        self._steps = 0
        self._reader = ObservationReader(episode.backend, *self._observed)
        result = self._tick(episode, [])
        if self._view is not None:
            self._view.start(episode, result)
        return self._observation(result), self._info(episode, result, [])

    def _open_episode(self, seed: int) -> Session:
        """Prepare and open the next episode, skipping numbers whose files exist."""
        for _ in range(_MAX_SKIPPED):
            number = self._episode_number
            self._episode_number += 1
            prepared = prepare_run(
                self._document, seed=seed, episode=number, sweep=True,
                name_suffix=f"-env{self.env_index}", backend_options=self._options,
            )
            try:
                return Session.open(prepared, self.output_dir, overwrite=self.overwrite)
            except OutputRefused:
                continue  # a file of an earlier session, or a recoverable .incomplete
        raise RuntimeError(f"FastSimRun-v0: {_MAX_SKIPPED} episode names in {self.output_dir} are taken")

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Send ``action`` through the audited control path and run one tick."""
        episode = self._open.episode
        if episode is None:
            if self._closed:
                raise RuntimeError("FastSimRun-v0: step() after close(); make a new environment")
            if self._done:
                raise RuntimeError("FastSimRun-v0: the episode has ended; call reset() before step()")
            raise RuntimeError("FastSimRun-v0: step() before reset(); call reset() first")
        commands = commands_for(self.controls, action, f"gym-{episode.ticks + 1}")
        result = self._tick(episode, commands)
        self._steps += 1
        task = task_of(episode.backend)
        reward = float(task.reward) if task is not None else 0.0
        terminated = bool(task is not None and (task.success or task.failure))
        truncated = not terminated and (
            episode.ticks >= self._ticks or (self.max_steps is not None and self._steps >= self.max_steps)
            or (self.time_limit is not None and self._steps >= self.time_limit)
        )
        info = self._info(episode, result, commands)
        if self._view is not None:
            self._view.result = result
        if terminated or truncated:
            why = ("the task succeeded" if task is not None and task.success else "the task failed") if terminated \
                else "the Run's duration" if episode.ticks >= self._ticks \
                else "max_steps" if self.max_steps is not None and self._steps >= self.max_steps \
                else "max_episode_steps"
            self._done = True
            if self._view is not None:  # its frame, while the scene is still open
                self._view.keep()
            info["committed"] = self._open.commit(CompletionKind.NORMAL, f"{why} after {self._steps} steps")
            self.committed += info["committed"]
        return self._observation(result), reward, terminated, truncated, info

    def _tick(self, episode: Session, commands: list[ControlCommand]) -> TickResult:
        """One tick, whole: Ctrl-C during it is held until the tick is done (a half-published
        tick would leave a gap the file cannot commit), then commits ``stopped``."""
        with _HeldInterrupt() as held:
            try:
                result = episode.step(commands)
            except Exception:  # the scene or a publisher broke: the episode commits failed
                self._done = True
                self.committed += self._open.commit(CompletionKind.FAILED, "")
                raise
            if held.interrupted:
                self._done = True
                self.committed += self._open.commit(CompletionKind.STOPPED, "interrupted by the operator")
        if held.interrupted:
            raise KeyboardInterrupt
        return result

    def _observation(self, result: TickResult) -> dict[str, np.ndarray]:
        assert self._reader is not None  # noqa: S101 - set by reset
        observation = self._reader.numeric(result.observation)  # a new dict: the images join it
        if self._observed[1]:
            observation.update(self._reader.cameras(result.cameras, self._shapes))
        return observation

    def _info(self, episode: Session, result: TickResult, commands: list[ControlCommand]) -> dict[str, Any]:
        task = task_of(episode.backend)
        control = [
            {"command_id": c.command_id, "accepted": o.accepted, "detail": dict(o.detail)}
            for c, o in zip(commands, result.outcomes, strict=True)
        ]
        return {
            "tick": result.tick, "seed": episode.prepared.seed,
            "control": control, "refused": [c["command_id"] for c in control if not c["accepted"]],
            "success": bool(task is not None and task.success), "failure": bool(task is not None and task.failure),
            "return": float(task.total) if task is not None else 0.0,
        }

    def render(self) -> np.ndarray | None:
        """``render_mode="rgb_array"``: a copy of the latest frame of the render camera (``None``
        without a render mode).  After the episode ended, its last frame."""
        if self._view is None:
            return None
        if self._closed:
            raise RuntimeError("FastSimRun-v0: render() after close(); make a new environment")
        return self._view.frame()

    def close(self) -> None:
        """Commit the open episode ``stopped`` and free the sub-env slot."""
        if self._closed:
            return
        self._closed = True
        try:
            self.committed += self._open.commit(CompletionKind.STOPPED, f"closed after {self._steps} steps")
        finally:
            self._finaliser.detach()
            self.slot.release()


class _HeldInterrupt:
    """Holds SIGINT on the main thread while a tick (or a commit) runs, when Python's own
    KeyboardInterrupt handler is installed; any other handler is left alone.  It calls
    ``_signal`` (the C module under ``signal``) directly: ``signal``'s enum wrappers cost
    about 20 µs per call here, ``_signal`` 0.1-2 µs."""

    def __init__(self) -> None:
        self.interrupted = False
        self._previous: Any = None

    def _hold(self, signum: int, frame: Any) -> None:
        self.interrupted = True

    def __enter__(self) -> _HeldInterrupt:
        if threading.current_thread() is threading.main_thread():
            previous = _signal.getsignal(_SIGINT)
            if previous is _signal.default_int_handler:
                self._previous = previous
                _signal.signal(_SIGINT, self._hold)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            _signal.signal(_SIGINT, self._previous)


def _names(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def notice_time_limit(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
    """``gym.make``'s last step for ``FastSimRun-v0`` (the registration's additional
    wrapper entry, applied after ``TimeLimit``): hand the stack's ``max_episode_steps``
    to the environment inside; the stack is returned unchanged (module docstring)."""
    inner = env.unwrapped
    if isinstance(inner, FastSimRunEnv):
        spec = env.spec
        inner.time_limit = spec.max_episode_steps if spec is not None else None
    return env


gym.register(
    id=ENV_ID, entry_point=FastSimRunEnv, disable_env_checker=False,  # type: ignore[arg-type]
    additional_wrappers=(WrapperSpec("notice_time_limit", f"{__name__}:notice_time_limit", {}),),
)
