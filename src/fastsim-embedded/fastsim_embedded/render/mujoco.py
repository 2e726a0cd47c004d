"""The MuJoCo render source: render.state sampling, kinematic posing for Replay, geometry.

Reads and writes only ``MjModel``/``MjData`` arrays (no MuJoCo import).  State keys
(see ``fastsim_record``'s render-state codec for the full table):

    | # | key                                        | from                                  |
    |---|--------------------------------------------|---------------------------------------|
    | 1 | ``articulation/<name>/joint_position``     | ``qpos`` of the articulation's joints |
    | 2 | ``articulation/<name>/joint_velocity``     | ``qvel`` of the same joints           |
    | 3 | ``rigid/<body>/pose``                      | the body's free joint ``qpos``,       |
    |   |                                            | reordered to x y z qx qy qz qw        |
    | 4 | ``rigid/<body>/linear_velocity``           | free joint ``qvel[0:3]`` (world)      |
    | 5 | ``rigid/<body>/angular_velocity``          | ``xmat @ qvel[3:6]`` (world)          |
    | 6 | ``fluid/<emitter>/positions``              | the emitter's packed float32 (N, 3)   |

Fluid particles are not MuJoCo bodies: :meth:`MujocoRenderSource.draw_particles` adds
them to a renderer's scene as small spheres (a ``MujocoDroidScene.decorators`` hook),
from the live emitter, or in Replay from the recorded positions.

Articulation joints are hinge or slide joints (one ``qpos`` entry each); rigid bodies
are the bodies that own a free joint.  :meth:`MujocoRenderSource.apply_state` is the
inverse of rows 1 and 3: it writes exactly the recorded float64 values into ``qpos``
(bit for bit) and zeroes ``qvel``; the caller runs ``mj_forward`` and never steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_embedded.render.fluid import ParticleEmitter
from fastsim_embedded.render.geometry import MujocoSceneGeometry
from fastsim_recording_format.encoding import readonly

__all__ = ["MujocoRenderSource", "renderer_facts"]

_FREE: Final = 0
_WXYZ_TO_XYZW: Final = np.array([0, 1, 2, 4, 5, 6, 3], dtype=np.intp)
_XYZW_TO_WXYZ: Final = np.array([0, 1, 2, 6, 3, 4, 5], dtype=np.intp)


@attrs.define(eq=False)
class MujocoRenderSource:
    """Render-side access to one MuJoCo model and data (module table)."""

    model: Any
    data: Any
    articulations: Mapping[str, Sequence[str]] = attrs.field(factory=dict)
    emitter: ParticleEmitter | None = None
    _joints: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]] = attrs.field(
        init=False, factory=dict
    )
    _rigid: list[tuple[str, int, int, int]] = attrs.field(init=False, factory=list)
    _geometry: MujocoSceneGeometry | None = attrs.field(init=False, default=None)
    _keys: dict[str, tuple[str, ...]] = attrs.field(init=False, factory=dict)
    # vectorised rigid-body gathers: pose qpos indices (n, 7), linear / angular dof indices
    _pose_idx: npt.NDArray[np.intp] = attrs.field(init=False, factory=lambda: np.zeros((0, 7), np.intp))
    _lin_idx: npt.NDArray[np.intp] = attrs.field(init=False, factory=lambda: np.zeros((0, 3), np.intp))
    _ang_idx: npt.NDArray[np.intp] = attrs.field(init=False, factory=lambda: np.zeros((0, 3), np.intp))
    _bodies: npt.NDArray[np.intp] = attrs.field(init=False, factory=lambda: np.zeros(0, np.intp))
    _rigid_keys: tuple[tuple[str, str, str], ...] = attrs.field(init=False, default=())
    _replayed_particles: npt.NDArray[Any] | None = attrs.field(init=False, default=None)
    particle_radius: float = 0.006
    particle_rgba: tuple[float, float, float, float] = (0.2, 0.45, 0.95, 1.0)

    def __attrs_post_init__(self) -> None:
        m = self.model
        articulations = dict(self.articulations) or {
            "robot": tuple(
                str(m.joint(j).name) for j in range(m.njnt) if int(m.jnt_type[j]) != _FREE
            )
        }
        for name, joints in articulations.items():
            ids = [int(m.joint(j).id) for j in joints]
            if any(int(m.jnt_type[j]) in (_FREE, 1) for j in ids):
                raise ValueError(f"articulation {name!r}: only hinge and slide joints")
            self._joints[name] = (
                np.array([int(m.jnt_qposadr[j]) for j in ids], dtype=np.intp),
                np.array([int(m.jnt_dofadr[j]) for j in ids], dtype=np.intp),
            )
            self._keys[name] = (
                f"articulation/{name}/joint_position", f"articulation/{name}/joint_velocity"
            )
        for j in range(m.njnt):
            if int(m.jnt_type[j]) == _FREE:
                body = int(m.jnt_bodyid[j])
                self._rigid.append(
                    (str(m.body(body).name), body, int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j]))
                )
        if self._rigid:
            self._pose_idx = np.array([qa + _WXYZ_TO_XYZW for _, _, qa, _ in self._rigid], np.intp)
            self._lin_idx = np.array([da + np.arange(3) for _, _, _, da in self._rigid], np.intp)
            self._ang_idx = self._lin_idx + 3
            self._bodies = np.array([b for _, b, _, _ in self._rigid], np.intp)
            self._rigid_keys = tuple(
                (f"rigid/{n}/pose", f"rigid/{n}/linear_velocity", f"rigid/{n}/angular_velocity")
                for n, _, _, _ in self._rigid
            )

    def render_state(self) -> dict[str, npt.NDArray[Any]]:
        """Rows 1-6 now: new read-only arrays, no compression, no quantization."""
        qpos, qvel = self.data.qpos, self.data.qvel
        state: dict[str, npt.NDArray[Any]] = {}
        for name, (qa, da) in self._joints.items():
            pos_key, vel_key = self._keys[name]
            state[pos_key] = readonly(qpos[qa])
            state[vel_key] = readonly(qvel[da])
        if self._rigid_keys:  # one gather per quantity; rows are read-only views
            poses = readonly(qpos[self._pose_idx])
            linear = readonly(qvel[self._lin_idx])
            rot = self.data.xmat[self._bodies].reshape(-1, 3, 3)
            angular = readonly(np.einsum("nij,nj->ni", rot, qvel[self._ang_idx]))
            for i, (pose_key, lin_key, ang_key) in enumerate(self._rigid_keys):
                state[pose_key] = poses[i]
                state[lin_key] = linear[i]
                state[ang_key] = angular[i]
        if self.emitter is not None:
            state[f"fluid/{self.emitter.name}/positions"] = self.emitter.positions()
        return state

    def check_state(self, state: Mapping[str, npt.NDArray[Any]]) -> None:
        """Raise ``ValueError`` (one line) unless :meth:`apply_state` can pose ``state``."""
        for name, (qa, _) in self._joints.items():
            key = self._keys[name][0]
            value = state.get(key)
            if value is None:
                raise ValueError(f"replay: the recorded state has no {key!r} (scene articulation {name!r})")
            if tuple(value.shape) != qa.shape:
                raise ValueError(
                    f"replay: {key} has shape {tuple(value.shape)}, the scene's articulation {qa.shape}"
                )
        for name, _, _, _ in self._rigid:  # every free body is posed from the state, none left behind
            key = f"rigid/{name}/pose"
            value = state.get(key)
            if value is None:
                raise ValueError(f"replay: the recorded state has no {key!r} (scene rigid body {name!r})")
            if tuple(value.shape) != (7,):
                raise ValueError(f"replay: {key} has shape {tuple(value.shape)}, expected (7,)")

    def apply_state(self, state: Mapping[str, npt.NDArray[Any]]) -> None:
        """Pose the model from a recorded state (rows 1 and 3, exact); velocities zeroed."""
        qpos = self.data.qpos
        for name, (qa, _) in self._joints.items():
            pos_key = self._keys[name][0]
            if pos_key not in state:
                raise KeyError(f"replay: the recorded state has no {pos_key!r}")
            values = np.asarray(state[pos_key])
            if values.shape != qa.shape:
                raise ValueError(f"replay: {pos_key} has shape {values.shape}, the scene {qa.shape}")
            qpos[qa] = values
        for name, _, fq, _ in self._rigid:
            pose = state.get(f"rigid/{name}/pose")
            if pose is not None:
                qpos[fq : fq + 7] = np.asarray(pose, dtype=np.float64)[_XYZW_TO_WXYZ]
        self.data.qvel[:] = 0.0
        fluids = [v for k, v in state.items() if k.startswith("fluid/")]
        self._replayed_particles = (
            np.concatenate([np.asarray(v).reshape(-1, 3) for v in fluids]) if fluids else None
        )

    def has_particles(self) -> bool:
        """Whether :meth:`draw_particles` has anything to draw (emitter or replayed state)."""
        return self.emitter is not None or self._replayed_particles is not None

    def draw_particles(self, scene: Any) -> None:
        """Append the current particles to an ``MjvScene`` as spheres (bounded by maxgeom)."""
        positions = self._replayed_particles
        if positions is None and self.emitter is not None:
            positions = self.emitter.positions()
        if positions is None or not len(positions):
            return
        import mujoco

        count = min(len(positions), int(scene.maxgeom) - int(scene.ngeom))
        size = np.array([self.particle_radius, 0.0, 0.0])
        mat = np.eye(3).reshape(9)
        rgba = np.array(self.particle_rgba, dtype=np.float32)
        sphere = int(mujoco.mjtGeom.mjGEOM_SPHERE)
        start = int(scene.ngeom)
        for i in range(count):
            mujoco.mjv_initGeom(
                scene.geoms[start + i], sphere, size, positions[i].astype(np.float64), mat, rgba
            )
        scene.ngeom = start + count

    def joint_positions(self, name: str) -> npt.NDArray[np.float64]:
        """The articulation's current joint positions (a copy)."""
        return np.array(self.data.qpos[self._joints[name][0]], dtype=np.float64)

    def scene_geometry(self) -> MujocoSceneGeometry:
        """The ``scene.geometry@2`` service (built on first use; building reads nothing)."""
        if self._geometry is None:
            self._geometry = MujocoSceneGeometry(self.model, self.data)
        return self._geometry

    def fluid_emitter(self) -> ParticleEmitter | None:
        """The scene's particle emitter, if it declares one."""
        return self.emitter


def renderer_facts(model: Any, version: str, gl_backend: str | None) -> dict[str, object]:
    """How a MuJoCo ``model``'s frames are made, for each camera's calibration profile (rule 6
    of ``fastsim_recording_format.codecs.calibration``): MuJoCo's ``version``, its GL backend
    (left out when unknown) and the model's ``<quality offsamples shadowsize>``, which
    ``mjr_makeContext`` gives the off-screen framebuffer and its shadow map."""
    quality = model.vis.quality
    facts: dict[str, object] = {"name": "mujoco", "version": version}
    if gl_backend:
        facts["gl_backend"] = gl_backend
    facts["msaa_samples"] = int(quality.offsamples)
    facts["shadow_map_size"] = int(quality.shadowsize)
    return facts
