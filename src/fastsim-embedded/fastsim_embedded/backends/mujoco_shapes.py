"""The ``mujoco-shapes`` backend: every shape the geometry stream carries, in one scene.

``assets/shapes.xml``: a plane, a sphere, a capsule, an ellipsoid, a cylinder, a box and
a mesh on free bodies that tumble onto the floor, and a box paddle on a hinge turned by
a velocity actuator (the articulation ``<robot>``, one joint ``spin``).  It exists so that
cross-backend Replay (``fsr replay --renderer moderngl``) is checked on every primitive
kind, not only the DROID-like scene's boxes, cylinders, capsules and planes.

Channels (``<robot>``: the first ``scenario.scene.robots`` key, default ``robot``):
``<robot>.joint_position`` and ``<robot>.joint_velocity`` (float64 (1,), rad and rad/s),
and the four channels of each camera (``front``, ``top``) as the ``mujoco`` backend
declares them.  Options (``scenario.scene.mujoco-shapes``): ``width``, ``height``
(default 320 x 240) and ``cameras`` (default both).  No commands, events or resets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any, ClassVar, Final

import attrs
import numpy as np

from fastsim_contract.calibration import calibration_digest, pinhole_profile
from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.base import (
    Array,
    BackendSpec,
    ControlCommand,
    ControlOutcome,
    TickScript,
)
from fastsim_embedded.backends.cameras import CameraSample, RenderedCameras, camera_channels
from fastsim_embedded.backends.mujoco_gl import (
    OffscreenRenderers,
    intrinsics_from_fovy,
    mujoco,
    mujoco_to_opencv_quaternion,
    renderer_facts,
)
from fastsim_embedded.render.mujoco import MujocoRenderSource
from fastsim_recording_format.encoding import readonly

__all__ = ["CAMERAS", "NAME", "ShapesBackend", "create_backend"]

NAME: Final = "mujoco-shapes"
CAMERAS: Final = ("front", "top")
_JOINTS: Final = ("spin",)


@attrs.define(eq=False)
class ShapesBackend(RenderedCameras):
    """The shapes scene, stepped by the embedded host (module header)."""

    #: the registry name
    name: ClassVar[str] = NAME

    spec: BackendSpec
    entity: str
    cameras: tuple[str, ...]
    width: int
    height: int
    model: Any = attrs.field(init=False, repr=False)
    data: Any = attrs.field(init=False, repr=False)
    _renderers: OffscreenRenderers = attrs.field(init=False, factory=OffscreenRenderers, repr=False)
    _declared: tuple[ChannelDescriptor, ...] = attrs.field(init=False, default=())
    _profiles: dict[str, tuple[Mapping[str, object], str]] = attrs.field(init=False, factory=dict)
    _steps: int = attrs.field(init=False, default=1)
    _source: MujocoRenderSource | None = attrs.field(init=False, default=None)
    _mjcf: str = attrs.field(init=False, default="", repr=False)  # the MJCF the model was compiled from

    def __attrs_post_init__(self) -> None:
        self._mjcf = resources.files("fastsim_embedded.backends").joinpath("assets", "shapes.xml").read_text(
            encoding="utf-8")
        self.model = mujoco.MjModel.from_xml_string(self._mjcf)
        self.data = mujoco.MjData(self.model)
        self._steps = max(1, round(1.0 / self.spec.physics_hz / float(self.model.opt.timestep)))
        self.reset(0)
        units = {"joint_position": "rad", "joint_velocity": "rad/s"}
        declared = [
            ChannelDescriptor(f"{self.entity}.{field}", "numeric", "float64", (1,), (unit,), self.entity,
                              attributes={"element_names": list(_JOINTS)})
            for field, unit in units.items()
        ]
        for cam in self.cameras:
            fovy = float(self.model.camera(cam).fovy[0])
            profile = {**pinhole_profile(cam, self.width, self.height, fovy), "renderer": renderer_facts(self.model)}
            self._profiles[cam] = (profile, calibration_digest(profile))
            declared += camera_channels(cam, self.width, self.height)
        self._declared = tuple(declared)

    def channels(self) -> Sequence[ChannelDescriptor]:
        """Joint state of the turntable and four channels per camera."""
        return self._declared

    def reset(self, generation: int) -> None:
        """The initial placement, the turntable at rest and commanded to 2 rad/s."""
        mujoco.mj_resetData(self.model, self.data)
        self.data.ctrl[:] = 2.0
        mujoco.mj_forward(self.model, self.data)

    def script(self, tick: int) -> TickScript:
        """Nothing scripted: the objects fall, the turntable turns."""
        return TickScript()

    def apply_control(self, command: ControlCommand) -> ControlOutcome:
        """No commands."""
        return ControlOutcome(False, {"error": f"{NAME} takes no commands"})

    def step(self, substeps: int) -> None:
        """Physics, then the pose-derived quantities of the new state (as the DROID scene)."""
        mujoco.mj_step(self.model, self.data, nstep=substeps * self._steps)
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)

    def sample_numeric(self) -> Mapping[str, Array]:
        """The turntable's joint position and velocity."""
        source = self.render_source()
        return {
            f"{self.entity}.joint_position": readonly(source.joint_positions(self.entity)),
            f"{self.entity}.joint_velocity": readonly(np.array(self.data.qvel[:1], dtype=np.float64)),
        }

    def camera_sample(self, camera: str) -> CameraSample:
        """RGB, K and extrinsics of ``camera`` now, with its calibration."""
        profile, digest = self._profiles[camera]
        renderer = self._renderers.get(self.model, self.width, self.height)
        renderer.update_scene(self.data, camera=camera)
        rgb = readonly(np.ascontiguousarray(renderer.render(), dtype=np.uint8))
        k = readonly(intrinsics_from_fovy(float(self.model.camera(camera).fovy[0]), self.width, self.height))
        placed = self.data.camera(camera)
        translation = readonly(np.array(placed.xpos, dtype=np.float64))
        return rgb, k, translation, readonly(mujoco_to_opencv_quaternion(np.asarray(placed.xmat))), profile, digest

    def describe(self) -> dict[str, object]:
        """The scene as recorded with the Run."""
        return {"model": "shapes.xml (every geometry shape kind)", "cameras": list(self.cameras),
                "render_size": [self.width, self.height], "mjcf": {"name": "shapes.xml", "text": self._mjcf}}

    def render_source(self) -> MujocoRenderSource:
        """render.state and scene.geometry access to the model."""
        if self._source is None:
            self._source = MujocoRenderSource(self.model, self.data, articulations={self.entity: _JOINTS})
        return self._source

    def close(self) -> None:
        """Release the renderers."""
        self._renderers.close()


def create_backend(spec: BackendSpec) -> ShapesBackend:
    """Build the shapes scene from ``scenario.scene.mujoco-shapes``."""
    scene, knobs = spec.knobs(NAME)
    robots = scene.get("robots")
    entity = str(next(iter(robots))) if isinstance(robots, Mapping) and robots else "robot"
    cameras = knobs.get("cameras", list(CAMERAS))
    if not isinstance(cameras, list) or any(c not in CAMERAS for c in cameras):
        raise ValueError(f"{NAME}: cameras must be a list drawn from {list(CAMERAS)}")
    width, height = int(knobs.get("width", 320)), int(knobs.get("height", 240))
    if width < 1 or height < 1:
        raise ValueError(f"{NAME}: width and height must be positive")
    return ShapesBackend(spec, entity, tuple(str(c) for c in cameras), width, height)
