"""The four channels of a rendered pinhole camera, declared and sampled one way.

Every scene that renders its cameras (``mujoco``, ``mujoco-shapes``, ``moderngl``) declares
these four channels per camera ``<cam>``, and samples them in this order at every tick:

    | # | channel                                             | role            | dtype, shape    | units | element names |
    |---|-----------------------------------------------------|-----------------|-----------------|-------|---------------|
    | 1 | ``sensors.<cam>.camera.rgb``                        | rgb             | uint8 (H, W, 3) | -     | -             |
    | 2 | ``sensors.<cam>.camera.intrinsics``                 | intrinsics      | float64 (3, 3)  | px    | -             |
    | 3 | ``sensors.<cam>.camera.extrinsics.translation``     | translation     | float64 (3,)    | m     | x y z         |
    | 4 | ``sensors.<cam>.camera.extrinsics.quaternion_xyzw`` | quaternion_xyzw | float64 (4,)    | 1     | qx qy qz qw   |

Every sample carries the digest of the camera's calibration profile; the intrinsics
sample also carries the profile.  :class:`RenderedCameras` is the part of ``Backend``
these scenes share: ``sample_cameras`` from one ``camera_sample(camera)`` per camera.
(``synthetic+cameras`` declares and orders its channels its own way.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.base import Array, CameraReading

__all__ = ["CameraSample", "RenderedCameras", "camera_channels"]

#: One camera at one tick: RGB, K, translation, quaternion (read-only arrays), then the
#: calibration profile and its digest.
CameraSample = tuple[Array, Array, Array, Array, Mapping[str, object], str]


def camera_channels(camera: str, width: int, height: int) -> list[ChannelDescriptor]:
    """The four channels ``camera`` declares (rows 1-4 of the module table)."""
    base = f"sensors.{camera}.camera"
    return [
        ChannelDescriptor(f"{base}.rgb", "rgb", "uint8", (height, width, 3), entity=camera),
        ChannelDescriptor(f"{base}.intrinsics", "intrinsics", "float64", (3, 3), ("px",), camera),
        ChannelDescriptor(
            f"{base}.extrinsics.translation", "translation", "float64", (3,), ("m", "m", "m"), camera,
            attributes={"element_names": ["x", "y", "z"]},
        ),
        ChannelDescriptor(
            f"{base}.extrinsics.quaternion_xyzw", "quaternion_xyzw", "float64", (4,), ("1",) * 4, camera,
            attributes={"element_names": ["qx", "qy", "qz", "qw"]},
        ),
    ]


class RenderedCameras:
    """The part of ``Backend`` every scene that renders its ``cameras`` shares: their four
    readings each, in the module table's order.  The scene gives one ``camera_sample``."""

    __slots__ = ()
    cameras: tuple[str, ...]

    def camera_sample(self, camera: str) -> CameraSample:
        """``camera`` now (``CameraSample``); every rendering scene defines it."""
        raise NotImplementedError

    def sample_cameras(self) -> Sequence[CameraReading]:
        """RGB, K, translation and quaternion of every camera, each with its digest."""
        readings: list[CameraReading] = []
        for cam in self.cameras:
            rgb, k, translation, quaternion, profile, digest = self.camera_sample(cam)
            base = f"sensors.{cam}.camera"
            readings += [
                CameraReading(cam, f"{base}.rgb", "rgb", rgb, digest),
                CameraReading(cam, f"{base}.intrinsics", "intrinsics", k, digest, profile),
                CameraReading(cam, f"{base}.extrinsics.translation", "translation", translation, digest),
                CameraReading(cam, f"{base}.extrinsics.quaternion_xyzw", "quaternion_xyzw", quaternion, digest),
            ]
        return readings
