"""Record any Gymnasium environment, single or vectorised, into sealed FSR episodes.

    import gymnasium as gym
    from fastsim_record.gym import RecordEpisodes, RecordVectorEpisodes

    env = RecordEpisodes(gym.make("HalfCheetah-v5", render_mode="rgb_array"), "out/cheetah")
    envs = RecordVectorEpisodes(gym.make_vec("CartPole-v1", num_envs=8, vectorization_mode="async"), "out/cartpole")

Each env episode is one Run of an installed FastSim host (found through the
``fastsim.hosts`` entry point ``gymnasium``; this package never imports the host), so the
Record plugin's lanes, worker, writer, transaction and validation record it unchanged.
Needs the ``[gym]`` extra.  ``read_episode`` reads one file back as step arrays.
"""

from __future__ import annotations

from fastsim_record.gym._host import GymWrapError
from fastsim_record.gym._read import GymEpisode, read_episode
from fastsim_record.gym._single import RecordEpisodes
from fastsim_record.gym._vector import RecordVectorEpisodes

__all__ = ["GymEpisode", "GymWrapError", "RecordEpisodes", "RecordVectorEpisodes", "read_episode"]
