"""Drive a FastSim Run with a policy through ``FastSimRun-v0``; Record commits each episode.

    python examples/policy/run_policy.py --policy scripted --episodes 3 --output-dir out/policy
    python examples/policy/run_policy.py --policy random --episodes 3 --output-dir out/policy
    fsr index out/policy -o out/policy/index.parquet     # success and return per episode

The Run is ``examples/policy/run.yaml`` (the synthetic scene's reach task) unless
``--run`` names another.  ``scripted`` solves the reach once per episode by damped least
squares on the scene's kinematics (``fastsim_embedded.backends.synthetic_arm``) and
commands that joint vector every step; ``random`` samples the action space.  One line per
episode: the file, success and the return.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from fastsim_embedded.backends.synthetic_arm import JOINT_LIMIT_RAD, end_effector

RUN = Path(__file__).with_name("run.yaml")


def solve_reach(q: np.ndarray, target: np.ndarray, restarts: int = 20) -> np.ndarray:
    """Joint targets whose end effector is at ``target``: damped least squares from ``q``,
    then from seeded random starts until one lands within 1 mm (else the closest)."""
    rng = np.random.default_rng(0)
    best = _descend(np.array(q, dtype=np.float64), target)
    for _ in range(restarts):
        if np.linalg.norm(end_effector(best) - target) < 1e-3:
            break
        candidate = _descend(rng.uniform(-0.5 * JOINT_LIMIT_RAD, 0.5 * JOINT_LIMIT_RAD, size=len(q)), target)
        if np.linalg.norm(end_effector(candidate) - target) < np.linalg.norm(end_effector(best) - target):
            best = candidate
    return best


def _descend(q: np.ndarray, target: np.ndarray, iterations: int = 300) -> np.ndarray:
    for _ in range(iterations):
        error = target - end_effector(q)
        if np.linalg.norm(error) < 1e-4:
            break
        jac = np.empty((3, len(q)))
        for k in range(len(q)):
            dq = np.zeros_like(q)
            dq[k] = 1e-6
            jac[:, k] = (end_effector(q + dq) - end_effector(q)) / 1e-6
        step = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(3), error)
        q = np.clip(q + step, -JOINT_LIMIT_RAD, JOINT_LIMIT_RAD)
    return q


class ScriptedReach:
    """Solve once per episode, then hold the solution."""

    def __init__(self) -> None:
        self.goal: np.ndarray | None = None

    def reset(self, obs: dict[str, np.ndarray]) -> None:
        self.goal = solve_reach(obs["robot.joint_position"], obs["task.target"])

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        if self.goal is None:
            raise RuntimeError("reset the policy with the episode's first observation")
        return self.goal


class RandomPolicy:
    """Uniform samples of the action space."""

    def __init__(self, space: gym.Space[Any], seed: int) -> None:
        self.space = space
        self.space.seed(seed)

    def reset(self, obs: dict[str, np.ndarray]) -> None:
        pass

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(self.space.sample())


def run(policy_name: str, episodes: int, output_dir: Path, run_file: Path, seed: int) -> list[dict[str, Any]]:
    """Play ``episodes`` episodes; returns each one's file, success and return."""
    env = gym.make("fastsim_embedded.gym:FastSimRun-v0", run=str(run_file), output_dir=str(output_dir))
    policy = ScriptedReach() if policy_name == "scripted" else RandomPolicy(env.action_space, seed)
    outcomes = []
    try:
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + episode)
            policy.reset(obs)
            total, done, info = 0.0, False, {}
            while not done:
                obs, reward, terminated, truncated, info = env.step(policy(obs))
                total += float(reward)
                done = terminated or truncated
            outcomes.append({"path": info["committed"][0], "success": bool(info["success"]), "return": total})
    finally:
        env.close()
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", choices=("scripted", "random"), default="scripted")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--output-dir", type=Path, default=Path("out/policy"))
    parser.add_argument("--run", type=Path, default=RUN)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for outcome in run(args.policy, args.episodes, args.output_dir, args.run, args.seed):
        success = str(outcome["success"]).lower()
        print(f"{outcome['path']}: success {success}, return {outcome['return']:.3f}")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
