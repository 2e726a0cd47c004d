"""The DROID-like MuJoCo scene: a 7-DoF arm with a parallel gripper on a table.

A standalone, simulator-facing object the embedded host's ``mujoco`` backend adapts.
It is authored in MJCF (``assets/droid_like.xml``) and owns one ``MjModel``/``MjData``.
Nothing in ``fastsim_record`` imports this module.

Joint vector (``JOINT_NAMES``, 13 entries, float64, every unit ``rad``): the arm's
``joint1..joint7`` then the gripper's six linkage joints.  ``finger_joint`` is driven; the
other five follow it through MJCF equality constraints (0 open, 0.8 closed).

Command vector (``COMMAND_NAMES``, 8 float64, every unit ``rad``): the targets of the joints
the 8 position actuators drive, ``joint1..joint7`` then ``finger_joint`` (the gripper: 0 open,
0.8 closed), named as in the joint vector, within ``command_range()`` (the joints' model
ranges); ``apply_command`` sets ctrl = gear * target.  The scripted pick, ``scripted_command``
(a pure function of the tick, same units), is applied by the host's control path.

Cameras (``CAMERA_NAMES``): ``exterior_left``, ``exterior_right`` (fixed, aimed at the
workspace) and ``wrist`` (mounted on the gripper, moving with it).

Camera conventions:

    | # | quantity        | convention                                                      |
    |---|-----------------|-----------------------------------------------------------------|
    | 1 | K (intrinsics)  | 3x3 float64; fy = (H/2) / tan(fovy/2), fx = fy (square pixels); |
    |   |                 | cx = (W-1)/2, cy = (H-1)/2: pixel centres at integer (u, v),    |
    |   |                 | (0, 0) the centre of the top-left pixel (OpenCV convention)     |
    | 2 | camera frame    | OpenCV: x right, y down, z forward (optical axis)               |
    | 3 | MuJoCo -> OpenCV| MuJoCo cameras look along -z with y up: R_cv = R_mj @ diag(1,-1,-1) |
    |   |                 | (a 180 degree turn about the camera's x axis)                    |
    | 4 | translation     | float64[3], camera centre in world coordinates (m)              |
    | 5 | quaternion_xyzw | float64[4], unit, rotation camera(OpenCV) -> world, w >= 0      |

A world point ``p`` projects as ``K @ R_cv.T @ (p - t)`` (then divide by z).

The GL setup is ``mujoco_gl``; the scripted pick and its inverse kinematics are ``mujoco_pick``.
Rendering is off-screen through ``mujoco.Renderer``, one reused renderer per resolution; the MJCF
keeps it cheap on software GL (no MSAA, shadows or skybox): about 7-15 ms per 320x240 frame on
llvmpipe here.  ``MUJOCO_GL`` defaults to ``egl``; if no GL context can be made,
:class:`RenderUnavailable` names the variable to set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any, Final

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_embedded.backends import mujoco_pick
from fastsim_embedded.backends.mujoco_gl import (
    OffscreenRenderers,
    RenderUnavailable,
    add_cameras,
    intrinsics_from_fovy,
    mujoco,
    mujoco_to_opencv_quaternion,
)
from fastsim_embedded.backends.mujoco_pick import PICK_DURATION_S, PICK_PHASE_NAMES
from fastsim_embedded.backends.mujoco_randomize import Randomization, apply_randomization
from fastsim_embedded.render.camera_mounts import CameraMount
from fastsim_recording_format.encoding import readonly

__all__ = [
    "ARM_JOINT_NAMES",
    "CAMERA_NAMES",
    "COMMAND_NAMES",
    "COMMAND_UNITS",
    "GRIPPER_JOINT_NAMES",
    "JOINT_NAMES",
    "JOINT_UNITS",
    "PICK_DURATION_S",
    "PICK_PHASE_NAMES",
    "BodyState",
    "CameraPose",
    "GeomInfo",
    "JointState",
    "MujocoDroidScene",
    "RenderUnavailable",
    "intrinsics_from_fovy",
    "mujoco_to_opencv_quaternion",
]

F64 = npt.NDArray[np.float64]
U8 = npt.NDArray[np.uint8]

ARM_JOINT_NAMES: Final = tuple(f"joint{i}" for i in range(1, 8))
GRIPPER_JOINT_NAMES: Final = (
    "finger_joint",
    "right_outer_knuckle_joint",
    "left_inner_knuckle_joint",
    "right_inner_knuckle_joint",
    "left_inner_finger_joint",
    "right_inner_finger_joint",
)
JOINT_NAMES: Final = ARM_JOINT_NAMES + GRIPPER_JOINT_NAMES
JOINT_UNITS: Final = ("rad",) * len(JOINT_NAMES)
COMMAND_NAMES: Final = (*ARM_JOINT_NAMES, "finger_joint")  # the joints actuators 0..7 drive
COMMAND_UNITS: Final = ("rad",) * len(COMMAND_NAMES)
CAMERA_NAMES: Final = ("exterior_left", "exterior_right", "wrist")
OBJECT_NAMES: Final = ("cube", "can", "block")
DEFAULT_WIDTH: Final = 320
DEFAULT_HEIGHT: Final = 240
ASSET: Final = "droid_like.xml"


@attrs.frozen
class CameraPose:
    """A camera's world pose in the OpenCV camera convention."""

    translation: F64  # (3,) m
    quaternion_xyzw: F64  # (4,) unit, camera -> world


@attrs.frozen
class BodyState:
    """One body's world pose and velocity (velocities at the body origin, world axes)."""

    name: str
    position: F64  # (3,) m
    quaternion_xyzw: F64  # (4,)
    linear_velocity: F64  # (3,) m/s
    angular_velocity: F64  # (3,) rad/s


@attrs.frozen
class JointState:
    """One joint's generalized position and velocity (free joints: 7 and 6 entries)."""

    name: str
    kind: str  # "free" | "ball" | "slide" | "hinge"
    qpos: F64
    qvel: F64


@attrs.frozen
class GeomInfo:
    """One geom of the model: primitive or mesh, placed relative to its body."""

    name: str
    body: str
    kind: str  # "plane" | "sphere" | "capsule" | "ellipsoid" | "cylinder" | "box" | "mesh"
    size: F64  # (3,) MuJoCo size parameters
    local_position: F64  # (3,) in the body frame
    local_quaternion_xyzw: F64  # (4,) in the body frame
    rgba: F64  # (4,)
    static: bool  # welded to the world: its pose never changes
    visual_only: bool  # takes part in no collision
    mesh_vertices: F64 | None = None  # (n, 3) in the mesh frame, for mesh geoms
    mesh_faces: npt.NDArray[np.int32] | None = None  # (m, 3)


@attrs.define(eq=False)
class MujocoDroidScene:
    """The DROID-like scene: state, control, cameras, render-state and geometry access."""

    width: int = DEFAULT_WIDTH
    height: int = DEFAULT_HEIGHT
    seed: int = 0
    randomization: Randomization | None = None  # None: the scene exactly as authored
    #: what the seed varied (``mujoco_randomize``), for the Run's scene description
    randomized: dict[str, Any] = attrs.field(init=False, factory=dict, repr=False)
    #: the MJCF the model was compiled from, as authored (``fsr export --to mcap`` attaches it)
    mjcf: str = attrs.field(init=False, default="", repr=False)
    model: Any = attrs.field(init=False, repr=False)  # mujoco.MjModel
    data: Any = attrs.field(init=False, repr=False)  # mujoco.MjData
    _renderers: OffscreenRenderers = attrs.field(init=False, factory=OffscreenRenderers, repr=False)
    _qposadr: npt.NDArray[np.intp] = attrs.field(init=False, repr=False)
    _dofadr: npt.NDArray[np.intp] = attrs.field(init=False, repr=False)
    _arm_dofs: npt.NDArray[np.intp] = attrs.field(init=False, repr=False)
    _gear: F64 = attrs.field(init=False, repr=False)  # ctrl = gear * target, per actuator
    _range: tuple[F64, F64] = attrs.field(init=False, repr=False)  # command_range()
    _home_key: int = attrs.field(init=False, repr=False)
    _waypoints: dict[str, F64] = attrs.field(init=False, factory=dict, repr=False)
    #: called with the renderer's ``MjvScene`` after ``update_scene`` (e.g. fluid particles)
    decorators: list[Callable[[Any], None]] = attrs.field(init=False, factory=list, repr=False)
    #: cameras the Run adds to the model (``camera_mounts``), after CAMERA_NAMES
    extra_cameras: tuple[CameraMount, ...] = ()

    def __attrs_post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"render size must be positive, got {self.width}x{self.height}")
        xml = resources.files("fastsim_embedded.backends").joinpath("assets", ASSET).read_text(encoding="utf-8")
        self.mjcf = xml
        self.model = add_cameras(xml, self.extra_cameras, CAMERA_NAMES)
        self.data = mujoco.MjData(self.model)
        joints = [self.model.joint(name) for name in JOINT_NAMES]
        self._qposadr = np.array([int(j.qposadr[0]) for j in joints], dtype=np.intp)
        self._dofadr = np.array([int(j.dofadr[0]) for j in joints], dtype=np.intp)
        self._arm_dofs = self._dofadr[:7]
        self._home_key = int(self.model.key("home").id)
        lift = mujoco_pick.lift_offset()
        if self.randomization is not None:
            self.randomized = apply_randomization(self.model, self._home_key, self.randomization, self.seed)
            lift = np.array(self.randomized["target_offset_m"], dtype=np.float64)
        m, driven = self.model, self.model.actuator_trnid[:, 0]
        self._gear = m.actuator_gear[:, 0].astype(np.float64)
        reach = np.sort(m.actuator_ctrlrange / self._gear[:, None], axis=1)  # what ctrl can ask, in rad
        self._range = (readonly(np.maximum(m.jnt_range[driven, 0], reach[:, 0])),
                       readonly(np.minimum(m.jnt_range[driven, 1], reach[:, 1])))
        self.reset()
        self._waypoints = mujoco_pick.plan_pick(
            self.model, self._home_key, self._qposadr, self._arm_dofs, "cube", lift
        )

    # -- time and state -------------------------------------------------------------

    @property
    def timestep(self) -> float:
        """MuJoCo's physics step (s)."""
        return float(self.model.opt.timestep)

    @property
    def sim_time(self) -> float:
        """Simulated time since the last reset (s)."""
        return float(self.data.time)

    def reset(self) -> None:
        """Restore the initial state (home keyframe: arm at home, gripper open, objects placed)."""
        mujoco.mj_resetDataKeyframe(self.model, self.data, self._home_key)
        mujoco.mj_forward(self.model, self.data)

    def step(self, n: int = 1) -> None:
        """Advance physics by ``n`` MuJoCo steps, then bring the pose-derived quantities
        up to the new state.

        ``mj_step`` computes kinematics *before* it integrates, so after it body, site
        and camera poses (``xpos``, ``xquat``, ``cam_xpos``: what cameras render, their
        extrinsics and the scene's geometry) describe the state one step earlier than
        ``qpos``.  Every sample of one tick must describe the same instant, so the
        position stage's kinematics, centre-of-mass and camera/light placement are run
        again on the new ``qpos`` (as dm_control's ``Physics.step`` does; a few µs, no
        collision detection).
        """
        if n < 0:
            raise ValueError(f"step count must be >= 0, got {n}")
        if n:
            mujoco.mj_step(self.model, self.data, nstep=n)
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_comPos(self.model, self.data)
            mujoco.mj_camlight(self.model, self.data)

    def advance(self, seconds: float) -> int:
        """Advance physics by ``seconds`` (rounded to whole steps); returns the step count."""
        n = round(seconds / self.timestep)
        self.step(n)
        return n

    def joint_position(self) -> F64:
        """``robot.joint_position``: the 13-entry joint vector (rad), a new read-only array."""
        return readonly(self.data.qpos[self._qposadr].astype(np.float64))

    def joint_velocity(self) -> F64:
        """``robot.joint_velocity``: the 13 joint velocities (rad/s), a new read-only array."""
        return readonly(self.data.qvel[self._dofadr].astype(np.float64))

    def joint_state(self) -> F64:
        """Joint position then joint velocity, back to back: one new read-only (26,) array."""
        return readonly(np.concatenate((self.data.qpos[self._qposadr], self.data.qvel[self._dofadr])))

    # -- control --------------------------------------------------------------------

    def command_range(self) -> tuple[F64, F64]:
        """Each command entry's (low, high) in rad, read-only: its joint's range in the model,
        within what its actuator's ctrl range reaches (``ctrlrange / gear``)."""
        return self._range

    def apply_command(self, command: Sequence[float] | F64) -> None:
        """Set the actuators from 8 joint targets in rad: ctrl = gear * target, clipped to range."""
        cmd = np.asarray(command, dtype=np.float64)
        if cmd.shape != (len(COMMAND_NAMES),) or not np.all(np.isfinite(cmd)):
            raise ValueError(
                f"command: expected {len(COMMAND_NAMES)} finite floats "
                f"({', '.join(COMMAND_NAMES)}), got shape {cmd.shape}"
            )
        lo, hi = self.model.actuator_ctrlrange[:, 0], self.model.actuator_ctrlrange[:, 1]
        self.data.ctrl[:] = np.clip(self._gear * cmd, lo, hi)

    def scripted_command(self, tick: int, tick_dt: float) -> F64:
        """The scripted pick's command at ``tick`` (0-based; tick ``k`` is at ``k * tick_dt`` s)."""
        gripper = (float(self._range[0][7]), float(self._range[1][7]))
        return mujoco_pick.scripted_command(self._waypoints, gripper, tick, tick_dt)

    phase_starting_at = staticmethod(mujoco_pick.phase_starting_at)

    def waypoint(self, name: str) -> F64:
        """A planned arm configuration (``home``, ``pregrasp``, ``grasp``, ``lift``), rad."""
        return self._waypoints[name].copy()

    # -- cameras --------------------------------------------------------------------

    def intrinsics(self, camera: str, width: int | None = None, height: int | None = None) -> F64:
        """K of ``camera`` at the given (default: the scene's) render size; read-only."""
        fovy = float(self.model.camera(camera).fovy[0])
        return readonly(intrinsics_from_fovy(fovy, width or self.width, height or self.height))

    def extrinsics(self, camera: str) -> CameraPose:
        """The camera's current world pose in the OpenCV convention (module table rows 2-5)."""
        cam = self.data.camera(camera)
        translation = readonly(np.array(cam.xpos, dtype=np.float64))
        quaternion = readonly(mujoco_to_opencv_quaternion(np.asarray(cam.xmat)))
        return CameraPose(translation, quaternion)

    def render(self, camera: str, width: int | None = None, height: int | None = None) -> U8:
        """A new read-only ``(height, width, 3)`` uint8 RGB image of ``camera`` now."""
        renderer = self._renderers.get(self.model, width or self.width, height or self.height)
        renderer.update_scene(self.data, camera=camera)
        for decorate in self.decorators:
            decorate(renderer.scene)
        image = np.ascontiguousarray(renderer.render(), dtype=np.uint8)
        return readonly(image)

    # -- render-state and geometry (for render.state / scene.geometry) -------------

    def body_names(self) -> tuple[str, ...]:
        """Every body except the world, in model order."""
        return tuple(self.model.body(i).name for i in range(1, self.model.nbody))

    def body_states(self) -> tuple[BodyState, ...]:
        """World pose and velocity of every body except the world."""
        out = []
        vel = np.empty(6)
        for i in range(1, self.model.nbody):
            body = self.data.body(i)
            mujoco.mj_objectVelocity(self.model, self.data, mujoco.mjtObj.mjOBJ_BODY, i, vel, 0)
            w, x, y, z = (float(v) for v in body.xquat)
            out.append(
                BodyState(
                    name=self.model.body(i).name,
                    position=readonly(np.array(body.xpos, dtype=np.float64)),
                    quaternion_xyzw=readonly(np.array([x, y, z, w])),
                    linear_velocity=readonly(vel[3:].copy()),
                    angular_velocity=readonly(vel[:3].copy()),
                )
            )
        return tuple(out)

    def joint_states(self) -> tuple[JointState, ...]:
        """qpos/qvel of every joint in the model (arm, gripper and the objects' free joints)."""
        kinds = {0: ("free", 7, 6), 1: ("ball", 4, 3), 2: ("slide", 1, 1), 3: ("hinge", 1, 1)}
        out = []
        for i in range(self.model.njnt):
            kind, nq, nv = kinds[int(self.model.jnt_type[i])]
            qa, da = int(self.model.jnt_qposadr[i]), int(self.model.jnt_dofadr[i])
            out.append(
                JointState(
                    name=self.model.joint(i).name,
                    kind=kind,
                    qpos=readonly(self.data.qpos[qa : qa + nq].astype(np.float64)),
                    qvel=readonly(self.data.qvel[da : da + nv].astype(np.float64)),
                )
            )
        return tuple(out)

    def geometry(self) -> tuple[GeomInfo, ...]:
        """Every geom (primitives and meshes) with its body and body-relative placement."""
        m = self.model
        out = []
        for i in range(m.ngeom):
            body = int(m.geom_bodyid[i])
            kind = mujoco.mjtGeom(int(m.geom_type[i])).name.removeprefix("mjGEOM_").lower()
            w, x, y, z = (float(v) for v in m.geom_quat[i])
            verts = faces = None
            if kind == "mesh":
                mesh = int(m.geom_dataid[i])
                va, vn = int(m.mesh_vertadr[mesh]), int(m.mesh_vertnum[mesh])
                fa, fn = int(m.mesh_faceadr[mesh]), int(m.mesh_facenum[mesh])
                verts = readonly(m.mesh_vert[va : va + vn].astype(np.float64))
                faces = readonly(m.mesh_face[fa : fa + fn].astype(np.int32))
            out.append(
                GeomInfo(
                    name=m.geom(i).name or f"geom{i}",
                    body=m.body(body).name or "world",
                    kind=kind,
                    size=readonly(m.geom_size[i].astype(np.float64)),
                    local_position=readonly(m.geom_pos[i].astype(np.float64)),
                    local_quaternion_xyzw=readonly(np.array([x, y, z, w])),
                    rgba=readonly(m.geom_rgba[i].astype(np.float64)),
                    static=int(m.body_weldid[body]) == 0,
                    visual_only=int(m.geom_contype[i]) == 0 and int(m.geom_conaffinity[i]) == 0,
                    mesh_vertices=verts,
                    mesh_faces=faces,
                )
            )
        return tuple(out)

    def object_position(self, name: str) -> F64:
        """World position of an object body (``cube``, ``can``, ``block``), m."""
        return np.array(self.data.body(name).xpos, dtype=np.float64)

    def gripper_closure(self) -> float:
        """The measured ``finger_joint`` as a fraction of its range (0 open, ~1 closed)."""
        lo, hi = self._range[0][7], self._range[1][7]
        return float((self.data.qpos[self._qposadr[7]] - lo) / (hi - lo))

    def close(self) -> None:
        """Release the renderers' GL resources."""
        self._renderers.close()
