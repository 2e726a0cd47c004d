"""Record a random policy on a Gymnasium env, single or vectorised, into sealed FSR episodes.

    python examples/gym/random_policy.py --out out/cheetah                      # HalfCheetah-v5, 3 episodes
    python examples/gym/random_policy.py --vector 4 --env CartPole-v1 --out out/cartpole
    fsr export out/cheetah --to lerobot -o dataset/cheetah --task "run forward"

Every episode is one committed file in ``--out`` (``episode-000000.fsr``, ... and, for a
vector env, ``episode-000000-env002.fsr``): it opens with ``fastsim_record.open``,
validates with ``fsr validate`` and exports with ``fsr export``.  Needs the ``[gym]``
extra; MuJoCo renders on the CPU with ``MUJOCO_GL=egl``.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym

from fastsim_record.gym import RecordEpisodes, RecordVectorEpisodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--out", required=True)
    parser.add_argument("--episodes", type=int, default=3, help="single env: episodes to record")
    parser.add_argument("--steps", type=int, default=100, help="the env's episode length (TimeLimit)")
    parser.add_argument("--vector", type=int, default=0, metavar="N", help="record N sub-envs (SyncVectorEnv)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    mujoco = args.env.endswith("-v5")
    kwargs = {"render_mode": "rgb_array", "width": 320, "height": 240} if mujoco else {}
    if args.vector:
        envs = RecordVectorEpisodes(
            gym.make_vec(args.env, num_envs=args.vector, vectorization_mode="sync",
                         max_episode_steps=args.steps, **kwargs),
            args.out,  # camera_envs=[0] would record frames of sub-env 0 only (numeric data of all)
        )
        envs.action_space.seed(args.seed)
        envs.reset(seed=args.seed)
        for _ in range(args.steps * 2):
            envs.step(envs.action_space.sample())
        envs.close()
        files = envs.files
    else:
        env = RecordEpisodes(gym.make(args.env, max_episode_steps=args.steps, **kwargs), args.out)
        env.action_space.seed(args.seed)
        for episode in range(args.episodes):
            env.reset(seed=args.seed + episode)
            done = False
            while not done:
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                done = terminated or truncated
        env.close()
        files = env.files
    for file in files:
        print(f"{file.path}  steps={file.steps}  seed={file.seed}  {file.completion}: {file.reason}")


if __name__ == "__main__":
    main()
