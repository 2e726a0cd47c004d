"""Record LeRobot's gym-pusht (``gym_pusht/PushT-v0``) into sealed FSR episodes, single or vectorised.

    python examples/gym/pusht.py --out out/pusht                     # 2 episodes of 50 steps
    python examples/gym/pusht.py --out out/pusht-vector --vector 2   # 2 sub-envs, 2 episodes each
    fsr validate out/pusht
    fsr export out/pusht --to lerobot -o dataset/pusht --task "push the T onto the target"
    python examples/gym/load_lerobot.py dataset/pusht                # LeRobotDataset loads it

The observation is gym-pusht's ``pixels_agent_pos``: the 96x96 RGB ``pixels`` become the
camera ``pixels`` (``observation.images.pixels`` in the dataset) and ``agent_pos`` the
channel ``observation.agent_pos`` (``observation.state``); the 2-D target position is
``action``.  ``--obs-type environment_state_agent_pos`` records the keypoints instead of
the image: ``observation.environment_state`` [16] in the dataset, as LeRobot's pusht env
presents it.  ``--render`` also records the env's 680x680 ``render()`` frames (the
uncalibrated camera ``render``).  The policy moves the agent by a random step from
where it is (a random walk, not PushT's uniform ``action_space.sample()`` jumps).
Needs ``gym-pusht`` (``pip install 'lerobot[pusht]'``: Python >= 3.12) and the ``[gym]`` extra.
"""

from __future__ import annotations

import argparse
from typing import Any

import gym_pusht  # noqa: F401  (registers gym_pusht/PushT-v0)
import gymnasium as gym
import numpy as np

from fastsim_record.gym import RecordEpisodes, RecordVectorEpisodes

ENV_ID = "gym_pusht/PushT-v0"


def walk(agent_pos: Any, rng: np.random.Generator) -> Any:
    """Targets a random step (up to 40 px) from the agent's position, inside PushT's 512 px square."""
    pos = np.asarray(agent_pos, np.float64)
    return np.clip(pos + rng.uniform(-40.0, 40.0, pos.shape), 0.0, 512.0).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--episodes", type=int, default=2, help="episodes to record (per sub-env with --vector)")
    parser.add_argument("--steps", type=int, default=50, help="the env's episode length (TimeLimit; PushT's own: 300)")
    parser.add_argument("--vector", type=int, default=0, metavar="N", help="record N sub-envs (SyncVectorEnv)")
    parser.add_argument("--obs-type", default="pixels_agent_pos", choices=["pixels_agent_pos", "environment_state_agent_pos"])
    parser.add_argument("--render", action="store_true", help="also record the 680x680 render() frames")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    kwargs = {"obs_type": args.obs_type, "render_mode": "rgb_array", "max_episode_steps": args.steps}
    options = {"cameras": args.render, "info_keys": ["coverage"]}
    if args.vector:
        envs = RecordVectorEpisodes(
            gym.make_vec(ENV_ID, num_envs=args.vector, vectorization_mode="sync", **kwargs), args.out, **options)
        obs, _ = envs.reset(seed=args.seed)
        # NEXT_STEP autoreset: the sub-envs end together every `steps`, and the step after an end resets them
        for _ in range(args.episodes * (args.steps + 1) - 1):
            obs, *_ = envs.step(walk(obs["agent_pos"], rng))
        envs.close()
        files = envs.files
    else:
        env = RecordEpisodes(gym.make(ENV_ID, **kwargs), args.out, **options)
        for episode in range(args.episodes):
            obs, _ = env.reset(seed=args.seed + episode)
            done = False
            while not done:
                obs, _, terminated, truncated, _ = env.step(walk(obs["agent_pos"], rng))
                done = terminated or truncated
        env.close()
        files = env.files
    for file in files:
        print(f"{file.path}  steps={file.steps}  seed={file.seed}  {file.completion}: {file.reason}")  # noqa: T201


if __name__ == "__main__":
    main()
