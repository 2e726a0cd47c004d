"""Real Gymnasium envs written for the suite (each passes ``gymnasium.utils.env_checker.check_env``).

``DictEnv``: Dict observations and actions over every mappable leaf kind (Box, Discrete,
MultiBinary, Tuple, MultiDiscrete).  ``SpaceEnv``: observations of a space given to it
(``Text``, ``Graph``, ``Sequence`` for the refusal tests).  ``Failing``: a wrapper whose
env raises at a chosen step.  ``ImageEnv``: a Dict observation with an RGB ``image``, a
``state``, a 1-channel ``mask`` and a 4-channel ``rgba`` image.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class DictEnv(gym.Env[dict[str, Any], dict[str, Any]]):
    """A point that moves by the action; ends when it leaves the box or after 40 steps."""

    metadata = {"render_modes": [], "render_fps": 10}  # noqa: RUF012 (Gymnasium declares it per instance)

    def __init__(self) -> None:
        self.observation_space = spaces.Dict({
            "agent_pos": spaces.Box(-5.0, 5.0, (2,), np.float32),
            "mode": spaces.Discrete(3),
            "flags": spaces.MultiBinary(4),
            "pair": spaces.Tuple((spaces.Discrete(5), spaces.Box(0, 255, (3,), np.uint8))),
        })
        self.action_space = spaces.Dict({
            "move": spaces.Box(-1.0, 1.0, (2,), np.float32),
            "grip": spaces.Discrete(2),
            "keys": spaces.MultiDiscrete([3, 4]),
        })
        self._pos = np.zeros(2, np.float32)
        self._t = 0

    def _obs(self) -> dict[str, Any]:
        flags = (np.abs(self._pos) > 1.0).astype(np.int8)
        return {
            "agent_pos": self._pos.copy(), "mode": int(self._t % 3),
            "flags": np.concatenate([flags, flags[::-1]]).astype(np.int8),
            "pair": (int(self._t % 5), self.np_random.integers(0, 256, 3).astype(np.uint8)),
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self._pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self._t = 0
        return self._obs(), {}

    def step(self, action: dict[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._pos = np.clip(self._pos + np.asarray(action["move"], np.float32), -5, 5).astype(np.float32)
        self._t += 1
        terminated = bool(np.abs(self._pos).max() >= 4.0)
        return self._obs(), float(-np.linalg.norm(self._pos)), terminated, self._t >= 40, {"distance": float(np.linalg.norm(self._pos))}


class SpaceEnv(gym.Env[Any, Any]):
    """Observations of ``space`` (only its construction matters to the refusal tests)."""

    metadata = {"render_modes": []}  # noqa: RUF012 (Gymnasium declares it per instance)

    def __init__(self, space: spaces.Space[Any]) -> None:
        self.observation_space = spaces.Dict({"ok": spaces.Discrete(2), "bad": space})
        self.action_space: spaces.Space[Any] = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.observation_space.sample(), 0.0, False, False, {}


class SampledEnv(gym.Env[Any, Any]):
    """Samples of the given observation and action spaces; truncates after 6 steps."""

    metadata = {"render_modes": []}  # noqa: RUF012 (Gymnasium declares it per instance)

    def __init__(self, observation_space: spaces.Space[Any], action_space: spaces.Space[Any]) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        self._t = 0
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._t += 1
        return self.observation_space.sample(), float(self._t), False, self._t >= 6, {}


class ImageEnv(gym.Env[dict[str, Any], Any]):
    """A square moves over a gradient; the observation shows it (``image``) and holds its position
    (``state``); ``mask`` (H, W) and ``rgba`` (H, W, 4) are the 1- and 4-channel images.  Ends after 15 steps."""

    metadata = {"render_modes": [], "render_fps": 10}  # noqa: RUF012 (Gymnasium declares it per instance)
    H, W = 24, 32

    def __init__(self) -> None:
        self.observation_space = spaces.Dict({
            "image": spaces.Box(0, 255, (self.H, self.W, 3), np.uint8),
            "state": spaces.Box(-100.0, 100.0, (2,), np.float32),
            "mask": spaces.Box(0, 255, (self.H, self.W), np.uint8),
            "rgba": spaces.Box(0, 255, (self.H, self.W, 4), np.uint8),
        })
        self.action_space = spaces.Discrete(4)
        self._pos = np.zeros(2, np.int64)
        self._t = 0

    def _obs(self) -> dict[str, Any]:
        y, x = np.mgrid[0:self.H, 0:self.W]
        image = np.stack([x * 8, y * 10, np.full_like(x, 60)], axis=-1).astype(np.uint8)
        r, c = int(self._pos[0]), int(self._pos[1])
        image[r:r + 6, c:c + 6] = (250, 250, 20)
        mask = np.zeros((self.H, self.W), np.uint8)
        mask[r:r + 6, c:c + 6] = 255
        rgba = np.concatenate([image, mask[..., None]], axis=-1)
        return {"image": image, "state": self._pos.astype(np.float32), "mask": mask, "rgba": rgba}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self._pos = self.np_random.integers(0, [self.H - 6, self.W - 6])
        self._t = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        move = [(0, 1), (0, -1), (1, 0), (-1, 0)][int(action)]
        self._pos = np.clip(self._pos + move, 0, [self.H - 6, self.W - 6])
        self._t += 1
        return self._obs(), float(self._pos[1]), self._t >= 15, False, {}


class Failing(gym.Wrapper[Any, Any, Any, Any]):
    """Raises ``RuntimeError("the physics blew up")`` at step ``at`` of its second episode."""

    def __init__(self, env: gym.Env[Any, Any], at: int) -> None:
        super().__init__(env)
        self.at, self.t, self.episodes = at, 0, 0

    def reset(self, **kwargs: Any) -> Any:
        self.t = 0
        self.episodes += 1
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        self.t += 1
        if self.episodes == 2 and self.t == self.at:
            raise RuntimeError("the physics blew up\nsecond line")
        return self.env.step(action)


def flat(value: Any, name: str) -> dict[str, np.ndarray]:
    """A space value by channel name (the suite's own statement of the mapping)."""
    if isinstance(value, dict):
        out: dict[str, np.ndarray] = {}
        for key, item in value.items():
            out.update(flat(item, f"{name}.{key}"))
        return out
    if isinstance(value, tuple):
        out = {}
        for i, item in enumerate(value):
            out.update(flat(item, f"{name}.{i}"))
        return out
    return {name: np.asarray(value)}
