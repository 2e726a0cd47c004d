#!/usr/bin/env bash
# Random policy -> FSR episodes -> one LeRobot v3 dataset, for a single and a vector env.
# Run from the repository root with the [gym,lerobot] extras installed.
set -euo pipefail
export MUJOCO_GL="${MUJOCO_GL:-egl}"
out="${1:-out/gym}"
python examples/gym/random_policy.py --out "$out/cheetah" --episodes 2 --steps 60
python examples/gym/random_policy.py --out "$out/cheetah-vector" --vector 2 --steps 40
fsr validate "$out/cheetah" "$out/cheetah-vector"
fsr export "$out/cheetah" --to lerobot -o "$out/lerobot-cheetah" --task "run forward"
fsr export "$out/cheetah-vector" --to lerobot -o "$out/lerobot-cheetah-vector" --task "run forward"
