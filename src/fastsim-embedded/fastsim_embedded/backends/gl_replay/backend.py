"""The ``moderngl`` backend: a recorded scene drawn again, with no physics engine.

Only ``fsr replay SOURCE.fsr RUN.yaml --renderer moderngl`` builds it (``replay``
passes the source through ``BackendSpec.options``).  It is the render source of a
:class:`~fastsim_embedded.render.replay.ReplayBackend`, which calls :meth:`pose_sample` with
each tick's decoded ``render.state``; the cameras are then drawn by ``gl.GlRenderer``.

Channels, from the source and the Replay Run's scene (``scenario.scene.<backend>``,
the recorded backend's own keys, so one Run serves both renderers):

    | # | channel                               | from                                       |
    |---|---------------------------------------|--------------------------------------------|
    | 1 | ``<entity>.joint_position``, ``_velocity`` | ``render.state`` ``articulation/<entity>/…``, |
    |   |                                       | declared as the source's run metadata did  |
    | 2 | ``sensors.<cam>.camera.rgb``          | drawn at ``width`` x ``height`` (default:  |
    |   |                                       | the camera's recorded size)                |
    | 3 | ``…intrinsics``                       | the recorded K, rescaled to that size      |
    |   |                                       | (``camera.rescale``)                       |
    | 4 | ``…extrinsics.translation``, ``quaternion_xyzw`` | recorded, at the tick              |

``cameras`` (default: every camera the source recorded) may name only recorded cameras,
at any resolution; ``extra_cameras`` (``fastsim_embedded.render.camera_mounts``) adds new
viewpoints, placed on the recorded pose of their body at each tick (320 x 240 unless the
scene gives ``width`` and ``height``, as the ``mujoco`` backend).  ``describe()`` says which renderer drew the frames (its
name, moderngl's version, the GL renderer) beside each camera's calibration source; each
camera's calibration profile names it too (``renderer``: ``GlRenderer.facts``, profile rule 6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_contract.calibration import PROFILE_SCHEMA, calibration_digest
from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.base import Array, BackendSpec, PosedScene
from fastsim_embedded.backends.cameras import CameraSample, RenderedCameras, camera_channels
from fastsim_embedded.backends.gl_replay.camera import rescale, view
from fastsim_embedded.backends.gl_replay.gl import (
    ALBEDO,
    Draw,
    GlFrame,
    GlRenderer,
    Particles,
    body_colour,
)
from fastsim_embedded.backends.gl_replay.scene import (
    CameraPose,
    RecordedScene,
    SceneRefused,
    tick_name,
)
from fastsim_embedded.render.camera_mounts import CameraMount, parse_mounts
from fastsim_recording_format import Record
from fastsim_recording_format.encoding import readonly

__all__ = ["NAME", "GlReplayBackend", "create_backend"]

NAME = "moderngl"
DEFAULT_SIZE = (320, 240)  # an added camera's size without width/height: the mujoco backend's default


def _profile(
    camera: str, k: npt.NDArray[np.float64], width: int, height: int, renderer: Mapping[str, object]
) -> dict[str, object]:
    return {
        "schema": PROFILE_SCHEMA, "camera": camera, "model": "pinhole", "width": width, "height": height,
        "fx": float(k[0, 0]), "fy": float(k[1, 1]), "cx": float(k[0, 2]), "cy": float(k[1, 2]),
        "distortion": [], "optical_frame": "opencv", "extrinsics": "camera_to_world",
        "units": {"focal": "px", "translation": "m"}, "renderer": dict(renderer),
    }


@attrs.define(eq=False)
class GlReplayBackend(PosedScene, RenderedCameras):
    """Draws a :class:`RecordedScene` with moderngl; posed only by Replay (module table)."""

    no_control = "the moderngl renderer applies no control"

    scene: RecordedScene
    entity: str
    cameras: tuple[str, ...]
    size: tuple[int, int] | None  # (width, height); None: each camera's recorded size
    numeric: tuple[ChannelDescriptor, ...] = ()
    mounts: Mapping[str, CameraMount] = attrs.field(factory=dict)  # cameras the Run adds
    renderer: GlRenderer = attrs.field(factory=GlRenderer)
    _declared: tuple[ChannelDescriptor, ...] = attrs.field(init=False, default=())
    _meshes: list[Any] = attrs.field(init=False, factory=list)
    _version: int = attrs.field(init=False, default=-1)
    _bodies: dict[str, npt.NDArray[np.float64]] = attrs.field(init=False, factory=dict)
    _state: Mapping[str, npt.NDArray[Any]] = attrs.field(init=False, factory=dict)
    _record: Record | None = attrs.field(init=False, default=None)
    _tick: int = attrs.field(init=False, default=0)
    _profiles: dict[bytes, tuple[dict[str, object], str]] = attrs.field(init=False, factory=dict)

    @property
    def name(self) -> str:
        """The registry and ``--renderer`` name."""
        return NAME

    def __attrs_post_init__(self) -> None:
        declared = list(self.numeric)
        for mount in self.mounts.values():
            if mount.body not in self.scene.poses:
                raise ValueError(
                    f"extra_cameras.{mount.name}.body: {self.scene.path.name} has no geometry body {mount.body!r}"
                )
        for cam in self.cameras:
            if cam not in self.scene.cameras and cam not in self.mounts:
                raise ValueError(
                    f"camera {cam!r} is not recorded in {self.scene.path.name} (recorded: "
                    f"{sorted(self.scene.cameras) or 'none'}); add it under extra_cameras"
                )
            w, h = self._size(cam)
            declared += camera_channels(cam, w, h)
        self._declared = tuple(declared)

    def _size(self, cam: str) -> tuple[int, int]:
        if self.size is not None:
            return self.size
        if cam in self.mounts:
            return DEFAULT_SIZE
        epochs = self.scene.cameras[cam].epochs
        profile = epochs[0].profile if epochs else {}
        return int(profile.get("width", 0)), int(profile.get("height", 0))

    # -- the Backend protocol ---------------------------------------------------------
    def channels(self) -> Sequence[ChannelDescriptor]:
        """The joint-state channels the source declared, and four channels per camera."""
        return self._declared

    def step(self, substeps: int) -> None:
        """Nothing to step: there is no physics."""

    def sample_numeric(self) -> Mapping[str, Array]:
        """Joint position and velocity of the posed sample, from render.state."""
        out: dict[str, Array] = {}
        for descriptor in self.numeric:
            field = descriptor.name.rpartition(".")[2]
            value = self._state.get(f"articulation/{self.entity}/{field}")
            if value is None:
                raise ValueError(f"{tick_name(self._tick, self._need())}: render.state has no {field} of {self.entity!r}")
            out[descriptor.name] = readonly(np.array(value, dtype=np.float64))
        return out

    def camera_sample(self, camera: str) -> CameraSample:
        """RGB, K, translation and quaternion of ``camera``, drawn at the posed sample."""
        frame, k, pose = self._draw(camera, depth=False)
        profile, digest = self._calibration(camera, k)
        return readonly(frame.rgb), readonly(k), readonly(pose[0]), readonly(pose[1]), profile, digest

    def describe(self) -> dict[str, object]:
        """Which renderer drew the frames, and where each camera's calibration came from."""
        cameras = {}
        for cam in self.cameras:
            if cam in self.mounts:
                mount = self.mounts[cam]
                cameras[cam] = {"calibration": "extra_cameras", "body": mount.body, "fovy": mount.fovy,
                                "size": list(self._size(cam))}
                continue
            recorded = self.scene.cameras[cam].epochs
            size = recorded[0].profile if recorded else {}
            cameras[cam] = {
                "calibration": "recorded", "recorded_size": [size.get("width"), size.get("height")],
                "size": list(self._size(cam)),
            }
        return {"renderer": self.renderer.info, "physics": None, "cameras": cameras,
                "source": self.scene.path.name}

    def close(self) -> None:
        """Release the GL context."""
        self.renderer.close()

    # -- the render source Replay poses ---------------------------------------------
    def render_source(self) -> GlReplayBackend:
        """Replay poses this backend itself."""
        return self

    def check_state(self, state: Mapping[str, npt.NDArray[Any]]) -> None:
        """Raise ``ValueError`` unless the state has what the declared channels need."""
        for descriptor in self.numeric:
            key = f"articulation/{self.entity}/{descriptor.name.rpartition('.')[2]}"
            if key not in state:
                raise ValueError(f"replay: the recorded state has no {key!r} ({descriptor.name})")

    def pose_sample(self, tick: int, record: Record, state: Mapping[str, npt.NDArray[Any]]) -> None:
        """Pose the scene at render.state sample ``record`` (tick ``tick``)."""
        self._bodies = self.scene.pose(tick, record, state)
        self._state, self._record, self._tick = state, record, tick

    def render_state(self) -> Mapping[str, npt.NDArray[Any]]:
        """The posed sample's recorded state (a Replay may record render.state again)."""
        return dict(self._state)

    def scene_geometry(self) -> None:
        """No ``scene.geometry@2``: the recording's geometry is drawn, not served again."""
        return None

    def fluid_emitter(self) -> None:
        """No live particle emitter (recorded ``fluid/<name>/positions`` are drawn as spheres)."""
        return None

    def joint_positions(self, entity: str) -> npt.NDArray[np.float64]:
        """The posed sample's joint positions (a copy)."""
        value = self._state.get(f"articulation/{entity}/joint_position")
        return np.array(value if value is not None else (), dtype=np.float64)

    # -- drawing ----------------------------------------------------------------------
    def _need(self) -> Record:
        if self._record is None:
            raise RuntimeError("the moderngl renderer was sampled before Replay posed it")
        return self._record

    def frame(self, cam: str, *, depth: bool = True, static_only: bool = False) -> GlFrame:
        """``cam`` at the posed sample (RGB and, by default, depth in metres); ``static_only``
        draws only the bodies the recording declares static (the rest's silhouette is
        where the two depths differ)."""
        return self._draw(cam, depth=depth, static_only=static_only)[0]

    def _draw(self, cam: str, *, depth: bool, static_only: bool = False) -> tuple[GlFrame, Any, tuple[Any, Any]]:
        record = self._need()
        if self._version != self.scene.version:
            self._meshes = [self.renderer.upload(item.tessellation) for item in self.scene.items]
            self._version = self.scene.version
        width, height = self._size(cam)
        mount = self.mounts.get(cam)
        pose = self.scene.camera(cam, record) if mount is None else None
        if mount is not None:
            translation, quaternion = mount.opencv_pose(self._bodies[mount.body])
            pose = CameraPose(mount.k(width, height), (width, height), translation, quaternion)
        if pose is None:
            raise SceneRefused(f"{tick_name(self._tick, record)}: camera {cam!r} has no recorded calibration yet")
        if not (np.all(np.isfinite(pose.translation)) and np.all(np.isfinite(pose.quaternion_xyzw))):
            raise SceneRefused(f"{tick_name(self._tick, record)}: camera {cam!r}: the recorded extrinsics are not finite")
        k = rescale(pose.k, pose.size, (width, height))
        draws = [
            Draw(mesh, self._bodies[item.body] @ item.local, self._albedo(item.body))
            for mesh, item in zip(self._meshes, self.scene.items)
            if not static_only or item.body in self.scene.static
        ]
        fluids = [np.asarray(v, np.float32).reshape(-1, 3) for key, v in self._state.items() if key.startswith("fluid/")]
        particles = Particles(np.concatenate(fluids)) if fluids and not static_only else None
        frame = self.renderer.render(
            k, width, height, view(pose.translation, pose.quaternion_xyzw), draws, depth=depth, particles=particles
        )
        return frame, k, (np.array(pose.translation, dtype=np.float64), np.array(pose.quaternion_xyzw, dtype=np.float64))

    def _albedo(self, body: str) -> tuple[float, float, float]:
        return ALBEDO if body in self.scene.static else body_colour(body)

    def _calibration(self, cam: str, k: npt.NDArray[np.float64]) -> tuple[dict[str, object], str]:
        key = cam.encode() + k.tobytes()
        if key not in self._profiles:
            w, h = self._size(cam)
            profile = _profile(cam, k, w, h, self.renderer.facts(w, h))
            self._profiles[key] = (profile, calibration_digest(profile))
        return self._profiles[key]


def _numeric(scene: RecordedScene, entity: str) -> tuple[ChannelDescriptor, ...]:
    """Row 1: the joint-state channels as the source's run metadata declared them."""
    recorded = scene.run_attributes().get("scene", {})
    channels = recorded.get("channels", []) if isinstance(recorded, Mapping) else []
    wanted = (f"{entity}.joint_position", f"{entity}.joint_velocity")
    out = []
    for c in channels if isinstance(channels, list) else []:
        if isinstance(c, Mapping) and c.get("name") in wanted and c.get("kind") == "numeric":
            out.append(ChannelDescriptor(
                name=str(c["name"]), kind="numeric", dtype=str(c.get("dtype", "float64")),
                shape=tuple(int(v) for v in c.get("shape", ())), units=tuple(str(u) for u in c.get("units", ())),
                entity=entity, attributes={"element_names": list(c.get("element_names", []))},
            ))
    return tuple(out)


def create_backend(spec: BackendSpec) -> GlReplayBackend:
    """Build the renderer for one Replay (``spec.options``: ``scene`` and ``scene_backend``)."""
    scene = spec.options.get("scene")
    if not isinstance(scene, RecordedScene):
        raise ValueError("the moderngl renderer draws a recording: use fsr replay SOURCE.fsr RUN.yaml --renderer moderngl")
    recorded = spec.scene.get(str(spec.options.get("scene_backend")))
    knobs: Mapping[str, Any] = recorded if isinstance(recorded, Mapping) else {}
    robots = spec.scene.get("robots")
    entity = str(next(iter(robots))) if isinstance(robots, Mapping) and robots else "robot"
    cameras = knobs.get("cameras", sorted(scene.cameras))
    if not isinstance(cameras, Sequence) or isinstance(cameras, str):
        raise ValueError("cameras must be a list of camera names")
    mounts = parse_mounts(knobs.get("extra_cameras"), f"{spec.options.get('scene_backend')}.extra_cameras")
    cameras = [*cameras, *(m.name for m in mounts)]
    size = None
    if "width" in knobs or "height" in knobs:
        size = (int(knobs.get("width", 320)), int(knobs.get("height", 240)))
    return GlReplayBackend(
        scene, entity, tuple(str(c) for c in cameras), size, _numeric(scene, entity), {m.name: m for m in mounts}
    )
