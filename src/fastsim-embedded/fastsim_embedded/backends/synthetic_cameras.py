"""``synthetic+cameras``: the synthetic scene plus N deterministic pinhole cameras.

Everything of the ``synthetic`` backend (numeric channels, commands, events, resets),
plus cameras configured by these knobs (``scenario.scene.synthetic`` or options):

    | # | key            | default | meaning                                                  |
    |---|----------------|---------|----------------------------------------------------------|
    | 1 | cameras        | 1       | number of cameras ``cam00``, ``cam01`` ...               |
    | 2 | camera_width   | 640     | RGB width in pixels                                      |
    | 3 | camera_height  | 480     | RGB height in pixels                                     |
    | 4 | camera_hz      | sensor  | camera cadence; ``sensor_hz / camera_hz`` must be whole  |
    | 5 | camera_fovy    | 58      | vertical field of view, degrees                          |

Each camera declares ``sensors.<cam>.camera.rgb`` (uint8 ``(H, W, 3)``),
``.intrinsics`` (float64 3x3), ``.extrinsics.translation`` (float64[3]) and
``.extrinsics.quaternion_xyzw`` (float64[4]).  Frames cycle through a few pre-rendered,
immutable images per camera, so the simulation thread pays nothing to "render" and a
benchmark measures Record alone.  The cadence decision is taken before anything is
sampled: on a tick without a camera sample ``sample_cameras`` returns ``()`` and Core
allocates no sequence for it.  Calibration (the pinhole profile and its digest) is
fixed per camera; every generation re-declares it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from fastsim_contract.calibration import calibration_digest, intrinsic_matrix, pinhole_profile
from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.base import (
    Array,
    BackendSpec,
    CameraReading,
    ControlCommand,
    ControlOutcome,
    ControlSpec,
    TickScript,
)
from fastsim_embedded.backends.synthetic import SyntheticBackend
from fastsim_embedded.backends.synthetic import create_backend as create_synthetic
from fastsim_embedded.backends.tasks import TaskTracker
from fastsim_recording_format.encoding import readonly
from fastsim_recording_format.synth import scene_frame

__all__ = ["SyntheticCameraBackend", "camera_descriptors", "create_backend"]

_FRAMES_PER_CAMERA = 4


def camera_descriptors(camera: str, width: int, height: int) -> tuple[ChannelDescriptor, ...]:
    """The four channels one camera declares."""
    prefix = f"sensors.{camera}.camera"
    return (
        ChannelDescriptor(f"{prefix}.rgb", "rgb", "uint8", (height, width, 3), ("1",), camera),
        ChannelDescriptor(f"{prefix}.intrinsics", "intrinsics", "float64", (3, 3), ("px",), camera),
        ChannelDescriptor(
            f"{prefix}.extrinsics.translation", "translation", "float64", (3,), ("m",), camera
        ),
        ChannelDescriptor(
            f"{prefix}.extrinsics.quaternion_xyzw", "quaternion_xyzw", "float64", (4,), ("1",), camera
        ),
    )


def _frame(height: int, width: int, seed: int) -> Array:
    """A smooth, rendered-looking frame (gradient, floor, a few boxes), read-only."""
    return readonly(scene_frame(height, width, 0, seed))


@attrs.define(eq=False)
class SyntheticCameraBackend:
    """The synthetic scene with cameras (the module's knob table)."""

    #: the registry name
    name: ClassVar[str] = "synthetic+cameras"

    base: SyntheticBackend
    cameras: tuple[str, ...]
    width: int
    height: int
    every: int
    fovy: float
    _declared: tuple[ChannelDescriptor, ...] = ()
    _frames: dict[str, tuple[Array, ...]] = attrs.field(factory=dict)
    _k: dict[str, tuple[Array, str, Mapping[str, object]]] = attrs.field(factory=dict)
    _tick: int = 0

    def __attrs_post_init__(self) -> None:
        declared = list(self.base.channels())
        for index, camera in enumerate(self.cameras):
            declared += camera_descriptors(camera, self.width, self.height)
            self._frames[camera] = tuple(
                _frame(self.height, self.width, 1000 * index + i) for i in range(_FRAMES_PER_CAMERA)
            )
            profile = pinhole_profile(camera, self.width, self.height, self.fovy)
            k = readonly(np.array(intrinsic_matrix(profile), dtype=np.float64))
            self._k[camera] = (k, calibration_digest(profile), profile)
        self._declared = tuple(declared)

    def channels(self) -> Sequence[ChannelDescriptor]:
        """The synthetic numeric channels, then four channels per camera."""
        return self._declared

    def reset(self, generation: int) -> None:
        """Reset the numeric scene (cameras keep their fixed calibration)."""
        self.base.reset(generation)

    def script(self, tick: int) -> TickScript:
        """The synthetic script; the step that follows is tick ``tick`` (camera cadence)."""
        self._tick = tick - 1
        return self.base.script(tick)

    def controls(self) -> tuple[ControlSpec, ...]:
        """As the synthetic scene: its first robot's joint position targets."""
        return self.base.controls()

    @property
    def task(self) -> TaskTracker | None:
        """The synthetic scene's task (``scenario.scene.task``), if any."""
        return self.base.task

    def apply_control(self, command: ControlCommand) -> ControlOutcome:
        """As the synthetic scene."""
        return self.base.apply_control(command)

    def step(self, substeps: int) -> None:
        """As the synthetic scene; counts the tick (a driver that plays no script, such as
        ``FastSimRun-v0``, gets the same camera cadence)."""
        self._tick += 1
        self.base.step(substeps)

    def sample_numeric(self) -> Mapping[str, Array]:
        """As the synthetic scene."""
        return self.base.sample_numeric()

    def sample_cameras(self) -> Sequence[CameraReading]:
        """Four readings per camera on camera ticks (RGB and extrinsics first), else ``()``."""
        tick = self._tick
        if tick % self.every:
            return ()
        out: list[CameraReading] = []
        for index, camera in enumerate(self.cameras):
            prefix = f"sensors.{camera}.camera"
            frames = self._frames[camera]
            angle = 0.01 * tick + index
            translation = readonly(np.array([math.cos(angle), math.sin(angle), 0.8]))
            half = 0.5 * angle
            quaternion = readonly(np.array([0.0, 0.0, math.sin(half), math.cos(half)]))
            k, digest, profile = self._k[camera]
            out += (
                CameraReading(camera, f"{prefix}.rgb", "rgb", frames[tick % len(frames)], digest),
                CameraReading(camera, f"{prefix}.extrinsics.translation", "translation", translation, digest),
                CameraReading(
                    camera, f"{prefix}.extrinsics.quaternion_xyzw", "quaternion_xyzw", quaternion, digest
                ),
                CameraReading(camera, f"{prefix}.intrinsics", "intrinsics", k, digest, profile),
            )
        return out

    def close(self) -> None:
        """As the synthetic scene."""
        self.base.close()


def _int(knobs: Mapping[str, Any], key: str, default: int, minimum: int) -> int:
    value = knobs.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"synthetic+cameras: {key} must be an integer >= {minimum} (got {value!r})")
    return value


def create_backend(spec: BackendSpec) -> SyntheticCameraBackend:
    """Build the synthetic scene and its cameras from the Run's scene and backend options."""
    knobs: dict[str, Any] = {}
    nested = dict(spec.scene).get("synthetic")
    if isinstance(nested, Mapping):
        knobs.update(nested)
    knobs.update(spec.options)
    count = _int(knobs, "cameras", 1, 0)
    width = _int(knobs, "camera_width", 640, 1)
    height = _int(knobs, "camera_height", 480, 1)
    camera_hz = float(knobs.get("camera_hz", spec.sensor_hz))
    ratio = spec.sensor_hz / camera_hz if camera_hz > 0 else 0.0
    every = round(ratio)
    if every < 1 or abs(ratio - every) > 1e-9:
        raise ValueError(
            f"synthetic+cameras: sensor_hz ({spec.sensor_hz:g}) must be a whole multiple of "
            f"camera_hz ({camera_hz:g})"
        )
    return SyntheticCameraBackend(
        base=create_synthetic(spec),
        cameras=tuple(f"cam{i:02d}" for i in range(count)),
        width=width,
        height=height,
        every=every,
        fovy=float(knobs.get("camera_fovy", 58.0)),
    )
