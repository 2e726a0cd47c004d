"""A real process that records Pendulum episodes and is then killed mid-episode (test_kill.py).

argv: DIRECTORY.  Three 20-step episodes are recorded and committed; then a second
wrapper continues in the same directory (``resume=True``) with an episode that runs
until the process is killed.  Each step's action is appended to DIRECTORY/../actions.jsonl
(flushed) and "mid" is printed once the fourth episode has run 400 steps.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import gymnasium as gym

from fastsim_record.gym import RecordEpisodes

directory = Path(sys.argv[1])
env = RecordEpisodes(gym.make("Pendulum-v1", max_episode_steps=20), directory)
env.action_space.seed(0)
for seed in range(3):
    env.reset(seed=seed)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        done = terminated or truncated
env.close()  # waits for the three commits
long_env = RecordEpisodes(gym.make("Pendulum-v1", max_episode_steps=1_000_000), directory, resume=True)
long_env.reset(seed=99)
with open(directory.parent / "actions.jsonl", "w") as log:
    for step in range(1, 1_000_000):
        action = long_env.action_space.sample()
        long_env.step(action)
        log.write(json.dumps([float(action[0])]) + "\n")
        log.flush()
        if step == 400:
            print("mid", flush=True)
        if step > 400:
            time.sleep(0.001)
