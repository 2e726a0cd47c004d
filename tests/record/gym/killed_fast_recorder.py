"""A real process that records short episodes back to back with ``durable=True`` (the default) and is killed
(SIGKILL, by itself) right after an episode ended: no ``close()``, no pause (test_kill.py).

argv: DIRECTORY MODE.  ``single``: CartPole episodes, ``reset()`` at once after each end, until
6 have ended; ``vector``: 3 CartPole sub-envs (``SAME_STEP``, ``writers=3``) for 60 steps.
What the env returned (the ended episodes' lengths and seeds) goes to DIRECTORY/../played.json.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from fastsim_record.gym import RecordEpisodes, RecordVectorEpisodes

directory, mode = Path(sys.argv[1]), sys.argv[2]
played: list[dict[str, object]] = []
if mode == "single":
    env = RecordEpisodes(gym.make("CartPole-v1"), directory)  # durable by default
    env.action_space.seed(0)
    env.reset(seed=0)
    steps = 0
    while len(played) < 6:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            played.append({"steps": steps, "seed": len(played)})
            steps = 0
            env.reset(seed=len(played))
else:
    envs = RecordVectorEpisodes(
        gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync",
                     vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}),
        directory, writers=3,  # durable by default; a slot per sub-env
    )
    envs.action_space.seed(0)
    envs.reset(seed=0)
    for _ in range(60):
        _, _, terminated, truncated, _ = envs.step(envs.action_space.sample())
        played += [{"sub_env": int(i)} for i in np.flatnonzero(terminated | truncated)]
(directory.parent / "played.json").write_text(json.dumps(played))
os.kill(os.getpid(), signal.SIGKILL)
