"""A real process that records without calling close() and ends by Ctrl-C (test_audit.py).

argv: DIRECTORY MODE.  MODE ``single``: CartPole episodes, SIGINT to itself at step 30 of
the second episode.  MODE ``vector``: a 3-sub-env ``AsyncVectorEnv``, SIGINT at step 50.
Neither calls ``close()``: the KeyboardInterrupt ends the interpreter.
"""

from __future__ import annotations

import os
import signal
import sys

import gymnasium as gym

from fastsim_record.gym import RecordEpisodes, RecordVectorEpisodes

signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell may start us with SIGINT ignored
directory, mode = sys.argv[1], sys.argv[2]
if mode == "single":
    env = RecordEpisodes(gym.make("CartPole-v1"), directory)
    env.action_space.seed(0)
    env.reset(seed=1)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        done = terminated or truncated
    env.reset(seed=2)
    for _ in range(30):
        env.step(0 if _ % 2 else 1)
    os.kill(os.getpid(), signal.SIGINT)
else:
    envs = RecordVectorEpisodes(gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="async"), directory)
    envs.action_space.seed(0)
    envs.reset(seed=1)
    for _ in range(50):
        envs.step(envs.action_space.sample())
    os.kill(os.getpid(), signal.SIGINT)
signal.pause()  # not reached: the KeyboardInterrupt is raised at once
