"""The scripted pick of the DROID-like scene: waypoints by inverse kinematics, then phases.

The arm moves between waypoints planned once per scene (``home``, ``pregrasp``,
``grasp``, ``lift``) with a smoothstep in each phase; the gripper closes in ``close``.
The command is the scene's: 7 arm joint targets then the ``finger_joint`` target, all in
rad; the gripper goes from its open end to its closed end of ``finger_joint``'s range
(``gripper``: the (open, closed) pair in rad, 0 and 0.8 in the DROID-like model).

    | phase    | start s | end s | from      | to        | gripper         |
    |----------|---------|-------|-----------|-----------|-----------------|
    | approach | 0.0     | 1.0   | home      | pregrasp  | open            |
    | descend  | 1.0     | 1.8   | pregrasp  | grasp     | open            |
    | close    | 1.8     | 2.3   | grasp     | grasp     | open -> closed  |
    | settle   | 2.3     | 2.5   | grasp     | grasp     | closed          |
    | lift     | 2.5     | 3.4   | grasp     | lift      | closed          |
    | hold     | 3.4     | -     | lift      | lift      | closed          |
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from fastsim_embedded.backends.mujoco_gl import mujoco
from fastsim_recording_format.encoding import readonly

__all__ = [
    "PICK_DURATION_S",
    "PICK_PHASE_NAMES",
    "lift_offset",
    "phase_starting_at",
    "plan_pick",
    "scripted_command",
]

F64 = npt.NDArray[np.float64]

# The scripted pick: (name, start_s, end_s, from_waypoint, to_waypoint, gripper_from, gripper_to);
# the gripper as a fraction of the way from open (0) to closed (1).
_PICK_PHASES: Final = (
    ("approach", 0.0, 1.0, "home", "pregrasp", 0.0, 0.0),
    ("descend", 1.0, 1.8, "pregrasp", "grasp", 0.0, 0.0),
    ("close", 1.8, 2.3, "grasp", "grasp", 0.0, 1.0),
    ("settle", 2.3, 2.5, "grasp", "grasp", 1.0, 1.0),
    ("lift", 2.5, 3.4, "grasp", "lift", 1.0, 1.0),
)
PICK_PHASE_NAMES: Final = (*(p[0] for p in _PICK_PHASES), "hold")
PICK_DURATION_S: Final = _PICK_PHASES[-1][2]
# Grasp-site offsets from the target object's initial centre, world frame (m).
_WAYPOINT_OFFSETS: Final = {"pregrasp": 0.12, "grasp": 0.0, "lift": 0.15}
# Hand orientation while picking: approach axis down, fingers closing along world y.
_PICK_ROTATION: Final = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])


def _smoothstep(s: float) -> float:
    s = min(1.0, max(0.0, s))
    return s * s * (3.0 - 2.0 * s)


def lift_offset() -> F64:
    """The lift target's default offset from the grasp (m)."""
    return np.array([0.0, 0.0, _WAYPOINT_OFFSETS["lift"]])


def scripted_command(waypoints: dict[str, F64], gripper: tuple[float, float], tick: int, tick_dt: float) -> F64:
    """The scripted pick's command at ``tick`` (0-based; tick ``k`` is at ``k * tick_dt`` s):
    the arm's 7 targets, then the gripper's between ``gripper`` = (open, closed), rad."""
    t = tick * tick_dt
    phase = _PICK_PHASES[-1]
    for candidate in _PICK_PHASES:
        if t < candidate[2]:
            phase = candidate
            break
    _, start, end, q_from, q_to, g_from, g_to = phase
    s = _smoothstep((t - start) / (end - start))
    a, b = waypoints[q_from], waypoints[q_to]
    arm = a + (b - a) * s
    closure = g_from + (g_to - g_from) * s
    grip = gripper[0] + (gripper[1] - gripper[0]) * closure
    return readonly(np.append(arm, grip).astype(np.float64))


def phase_starting_at(tick: int, tick_dt: float) -> str | None:
    """The pick phase (``PICK_PHASE_NAMES``) starting in ``[tick, tick + 1) * tick_dt``."""
    starts = [(p[1], p[0]) for p in _PICK_PHASES] + [(PICK_DURATION_S, "hold")]
    for start, name in starts:
        if tick * tick_dt <= start + 1e-12 < (tick + 1) * tick_dt:
            return name
    return None


def plan_pick(
    model: Any, home_key: int, qposadr: npt.NDArray[np.intp], arm_dofs: npt.NDArray[np.intp],
    target: str, lift: F64,
) -> dict[str, F64]:
    """Solve IK once for the pick's waypoints from the target's initial position
    (``lift``: the lift target's offset from the grasp, m)."""
    scratch = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, scratch, home_key)
    mujoco.mj_forward(model, scratch)
    home = scratch.qpos[qposadr[:7]].copy()
    centre = np.array(scratch.body(target).xpos)
    waypoints = {"home": home}
    seed = home
    for name in ("pregrasp", "grasp", "lift"):
        goal = centre + (lift if name == "lift" else np.array([0.0, 0.0, _WAYPOINT_OFFSETS[name]]))
        seed = _solve_ik(model, scratch, qposadr[:7], arm_dofs, seed, goal, _PICK_ROTATION)
        waypoints[name] = seed
    return waypoints


def _solve_ik(
    m: Any, scratch: Any, qadr: npt.NDArray[np.intp], arm_dofs: npt.NDArray[np.intp],
    seed: F64, goal: F64, rot: F64,
) -> F64:
    """Damped least squares on the grasp site's position and orientation."""
    site = int(m.site("grasp_site").id)
    lo, hi = m.jnt_range[:7, 0], m.jnt_range[:7, 1]
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    scratch.qpos[qadr] = seed
    target_quat = np.empty(4)
    mujoco.mju_mat2Quat(target_quat, rot.reshape(9))
    site_quat, err_rot = np.empty(4), np.empty(3)
    for _ in range(300):
        mujoco.mj_kinematics(m, scratch)
        mujoco.mj_comPos(m, scratch)
        err_pos = goal - scratch.site_xpos[site]
        mujoco.mju_mat2Quat(site_quat, scratch.site_xmat[site])
        mujoco.mju_subQuat(err_rot, target_quat, site_quat)  # in the site's frame
        err_rot_world = scratch.site_xmat[site].reshape(3, 3) @ err_rot
        err = np.concatenate([err_pos, err_rot_world])
        if np.linalg.norm(err_pos) < 1e-4 and np.linalg.norm(err_rot) < 1e-3:
            break
        mujoco.mj_jacSite(m, scratch, jacp, jacr, site)
        jac = np.vstack([jacp, jacr])[:, arm_dofs]
        dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(6), err)
        scratch.qpos[qadr] = np.clip(scratch.qpos[qadr] + dq, lo, hi)
    return np.array(scratch.qpos[qadr], dtype=np.float64)
