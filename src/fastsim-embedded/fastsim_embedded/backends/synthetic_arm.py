"""The synthetic scene's controllable arm: joint position targets and a made-up kinematics.

The first entity of the ``synthetic`` scene is an arm a driver may command with
``set_joint_targets`` (``args.targets``: one target per joint, rad, within
``JOINT_LIMIT_RAD``).  Until the first such command its joints follow the scene's seeded
sinusoids, exactly as before; from then on each joint moves toward its target at up to
``MAX_SPEED_RAD_S`` (a rate-limited position servo), and its velocity is that motion.

Its end effector (``end_effector``): joint 1 turns the arm about z (yaw), joints 2..n
pitch its links (equal lengths, together ``REACH_M``) in the vertical plane, from a
shoulder at ``SHOULDER_M``.  A reach target drawn from the seed (``seeded_target``) is the
end effector of a random joint vector within the limits, so it is always reachable.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import numpy.typing as npt

from fastsim_embedded.backends.base import ControlSpec

__all__ = ["JOINT_LIMIT_RAD", "MAX_SPEED_RAD_S", "control_spec", "end_effector", "seeded_target", "track"]

F64 = npt.NDArray[np.float64]

JOINT_LIMIT_RAD: Final = math.pi
MAX_SPEED_RAD_S: Final = 2.0
REACH_M: Final = 0.8
SHOULDER_M: Final = (0.1, 0.3)  # radius, height


def control_spec(entity: str, dof: int) -> ControlSpec:
    """``set_joint_targets`` on ``entity``: ``dof`` joint position targets (rad)."""
    return ControlSpec(
        command="set_joint_targets", target=entity, arg="targets",
        element_names=tuple(f"joint{k + 1}" for k in range(dof)), units=("rad",) * dof,
        low=(-JOINT_LIMIT_RAD,) * dof, high=(JOINT_LIMIT_RAD,) * dof,
    )


def end_effector(q: F64) -> F64:
    """The end effector's position (m) for the joint vector ``q``."""
    pitch = np.cumsum(q[1:])
    link = REACH_M / len(pitch) if len(pitch) else 0.0
    radius = SHOULDER_M[0] + link * float(np.cos(pitch).sum())
    height = SHOULDER_M[1] + link * float(np.sin(pitch).sum())
    return np.array([radius * math.cos(q[0]), radius * math.sin(q[0]), height])


def seeded_target(seed: int, dof: int) -> F64:
    """A reachable reach target drawn from ``seed`` (its own stream: the scene's joints
    draw the same values with or without a task)."""
    rng = np.random.default_rng([seed, 24])
    return end_effector(rng.uniform(-0.5 * JOINT_LIMIT_RAD, 0.5 * JOINT_LIMIT_RAD, size=dof))


def track(q: F64, targets: F64, seconds: float) -> tuple[F64, F64]:
    """``(new q, velocity)`` after moving toward ``targets`` for ``seconds`` at up to
    ``MAX_SPEED_RAD_S`` per joint."""
    step = np.clip(targets - q, -MAX_SPEED_RAD_S * seconds, MAX_SPEED_RAD_S * seconds)
    return q + step, step / seconds if seconds > 0 else np.zeros_like(q)
