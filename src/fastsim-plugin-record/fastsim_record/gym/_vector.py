"""``RecordVectorEpisodes``: a ``gymnasium.vector.VectorWrapper``; each sub-env episode is one FSR file.

Sub-envs end at different times, so each has its own episode and file
(``<prefix>-<episode:06d>-env<i:03d>.fsr``, episodes numbered in the order they start).
The autoreset mode is read from ``metadata["autoreset_mode"]``, never guessed:

    | # | mode        | the step after sub-env i ended             | the step that ends it            |
    |---|-------------|--------------------------------------------|----------------------------------|
    | 1 | NEXT_STEP   | returns the reset observation and ignores  | an ordinary transition; the      |
    |   |             | the action: no transition, a new episode   | episode commits                  |
    |   |             | starts with that observation               |                                  |
    | 2 | SAME_STEP   | an ordinary transition of the new episode  | the transition ends on           |
    |   |             |                                            | ``info["final_obs"][i]`` (and    |
    |   |             |                                            | ``final_info``); the returned    |
    |   |             |                                            | observation starts a new episode |
    | 3 | DISABLED    | nothing (i stays ended until the caller    | an ordinary transition           |
    |   |             | resets it with ``reset_mask``)             |                                  |
    | 4 | missing or any other value: refused at wrap time with one line                           |

Autoreset episodes carry no seed of their own (the sub-env's RNG continues): their
``gym.reset`` event says ``how: autoreset`` and ``seed: null``.  ``render()`` frames of
the sub-envs ``camera_envs`` picks are recorded: a ``SyncVectorEnv``'s through each
sub-env (calibrated when MuJoCo); an ``AsyncVectorEnv``'s sub-envs live in other
processes, so their frames come from one ``call("render")`` per step (every sub-env
renders: Gymnasium has no call on a subset) and are ``uncalibrated``.  Image
observations travel with the observation and are cameras of every sub-env.  When the
vector env raises, every sub-env's open episode commits what it recorded, completion
``failed`` with the exception's one line, and the exception reaches the caller.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

import fastsim_record.gym._single as single
from fastsim_contract.values import CompletionKind
from fastsim_record.gym._host import GymWrapError

__all__ = ["RecordVectorEpisodes", "autoreset_mode"]


def autoreset_mode(env: Any) -> AutoresetMode:
    """The vector env's declared autoreset mode (``GymWrapError`` when missing or unknown)."""
    declared = (getattr(env, "metadata", None) or {}).get("autoreset_mode")
    if isinstance(declared, AutoresetMode):
        return declared
    for mode in AutoresetMode:
        if declared == mode.value or declared == mode.name:
            return mode
    known = ", ".join(m.name for m in AutoresetMode)
    raise GymWrapError(
        f"metadata['autoreset_mode']: {declared!r} is not an autoreset mode this recorder knows ({known}); "
        "refusing to guess where episodes end"
    )


def _item(value: Any, i: int) -> Any:
    """Sub-env ``i``'s part of a batched space value."""
    if isinstance(value, dict):
        return {k: _item(v, i) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_item(v, i) for v in value)
    return value[i]


def _sub_info(info: dict[str, Any], i: int, keys: tuple[str, ...]) -> dict[str, Any]:
    """Sub-env ``i``'s whitelisted scalar info entries (where its ``_<key>`` mask is set)."""
    out = {}
    for key in keys:
        if key in info and bool(np.asarray(info.get(f"_{key}", True))[i] if f"_{key}" in info else True):
            out[key] = info[key][i]
    return out


class RecordVectorEpisodes(gym.vector.VectorWrapper):
    """Record every sub-env episode of ``env`` into ``directory`` (module table)."""

    def __init__(self, env: gym.vector.VectorEnv, directory: str | Path, **options: object) -> None:
        super().__init__(env)
        self.mode = autoreset_mode(env)
        self.n = int(env.num_envs)
        subs = getattr(env.unwrapped, "envs", None)
        sub_envs = list(subs) if isinstance(subs, list | tuple) and len(subs) == self.n else [None] * self.n
        self._recording = single.open_recording(
            env, directory, dict(options), sub_envs=sub_envs, vector=True,
            observation_space=env.single_observation_space, action_space=env.single_action_space,
        )
        self._sub_envs = sub_envs
        self._info_keys: tuple[str, ...] = tuple(self._recording.options.info_keys)
        self._autoreset = np.zeros(self.n, dtype=bool)
        self.files: list[Any] = []
        self._committed = False
        single.commit_at_exit(self)

    def _frames(self) -> list[Any]:
        rec = self._recording
        wanted = [rec.wants_render(i) for i in range(self.n)]
        remote: Any = None
        if any(w and env is None for w, env in zip(wanted, self._sub_envs, strict=True)):
            # sub-envs in other processes: one call("render") renders every sub-env (Gymnasium has no subset
            # call), in parallel in their processes; only the selected frames are kept
            remote = self.env.unwrapped.call("render")  # type: ignore[attr-defined]  # Sync/AsyncVectorEnv
        return [
            None if not wanted[i] else env.render() if env is not None else remote[i]
            for i, env in enumerate(self._sub_envs)
        ]

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``); each starts a new episode."""
        mask = None if not options or options.get("reset_mask") is None else np.asarray(options["reset_mask"])
        used = single.draw_seed() if seed is None else seed
        (observation, info), frames = single.env_call(self._recording, self.env.reset, self._frames,
                                               seed=used, options=options)
        recorded = {k: v for k, v in (options or {}).items() if k != "reset_mask"} or None
        # Sync/Async give sub-env i the seed seed + i (or seeds[i]); any other VectorEnv (e.g.
        # CartPoleVectorEnv) seeds itself as a whole: each sub-env records that one seed
        per_sub_env = isinstance(self.env.unwrapped, gym.vector.SyncVectorEnv | gym.vector.AsyncVectorEnv)
        how = "reset" if per_sub_env else "reset (one seed for the whole vector env)"
        for i in range(self.n):
            if mask is not None and not bool(mask[i]):
                continue
            sub_seed = used if not per_sub_env or used is None else (used + i if isinstance(used, int) else used[i])
            if self._recording.is_open(i):
                self._recording.end(i, CompletionKind.STOPPED, "truncated: reset() started a new episode")
            self._recording.begin(i, sub_seed, recorded, _item(observation, i), frames[i], how=how)
            self._autoreset[i] = False
        return observation, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """One vector step: one transition (or a reset, or nothing) per sub-env (module table)."""
        stepped, frames = single.env_step(self._recording, self.env, self._frames, actions)
        observation, reward, terminated, truncated, info = stepped
        rec, keys = self._recording, self._info_keys
        final = info.get("_final_obs") if self.mode is AutoresetMode.SAME_STEP else None
        for i in range(self.n):
            obs_i = _item(observation, i)
            if self.mode is AutoresetMode.NEXT_STEP and self._autoreset[i]:
                rec.begin(i, None, None, obs_i, frames[i], how="autoreset")  # the action was ignored
                continue
            action_i = _item(actions, i)
            ended = bool(terminated[i]) or bool(truncated[i])
            if final is not None and ended and bool(final[i]):
                final_info = _sub_info(info.get("final_info", {}), i, keys)
                rec.step(i, action_i, info["final_obs"][i], float(reward[i]), bool(terminated[i]),
                         bool(truncated[i]), final_info, None)
                rec.begin(i, None, None, obs_i, frames[i], how="autoreset")
                continue
            rec.step(i, action_i, obs_i, float(reward[i]), bool(terminated[i]), bool(truncated[i]),
                     _sub_info(info, i, keys), frames[i])
        if self.mode is AutoresetMode.NEXT_STEP:
            self._autoreset = np.logical_or(terminated, truncated)
        return observation, reward, terminated, truncated, info

    def close_recording(self, reason: str = "truncated: the env was closed") -> None:
        """Commit every open episode (``reason``) and wait for every commit, once: ``files``."""
        if not self._committed:
            self._committed = True
            self.files = self._recording.close(reason)
            single.warn_uncommitted(self.files)

    def close(self, **kwargs: Any) -> None:
        """Open episodes end as truncated; waits for every commit (``files``)."""
        self.close_recording()
        super().close(**kwargs)
