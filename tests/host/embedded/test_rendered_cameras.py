"""``backends/cameras.py``: one declaration and one reading order for a rendered camera."""

from __future__ import annotations

import numpy as np

from fastsim_embedded.backends.cameras import CameraSample, RenderedCameras, camera_channels


class _Scene(RenderedCameras):
    cameras = ("left", "wrist")

    def camera_sample(self, camera: str) -> CameraSample:
        rgb = np.zeros((2, 3, 3), np.uint8)
        return rgb, np.eye(3), np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]), {"camera": camera}, f"d-{camera}"


def test_four_channels_per_camera() -> None:
    """rgb, intrinsics, translation, quaternion: shapes, units and element names."""
    rgb, k, t, q = camera_channels("wrist", 32, 24)
    assert [c.name for c in (rgb, k, t, q)] == [
        "sensors.wrist.camera.rgb", "sensors.wrist.camera.intrinsics",
        "sensors.wrist.camera.extrinsics.translation", "sensors.wrist.camera.extrinsics.quaternion_xyzw",
    ]
    assert (rgb.shape, k.units, t.units, q.units) == ((24, 32, 3), ("px",), ("m", "m", "m"), ("1",) * 4)
    assert q.attributes == {"element_names": ["qx", "qy", "qz", "qw"]}
    assert {c.entity for c in (rgb, k, t, q)} == {"wrist"}


def test_readings_in_table_order_with_the_profile_on_intrinsics() -> None:
    """Each camera's four readings in order, each with its digest; only K carries the profile."""
    readings = _Scene().sample_cameras()
    assert [(r.camera, r.role) for r in readings] == [
        (cam, role) for cam in ("left", "wrist") for role in ("rgb", "intrinsics", "translation", "quaternion_xyzw")
    ]
    assert all(r.calibration_digest == f"d-{r.camera}" for r in readings)
    assert [r.profile for r in readings if r.profile is not None] == [{"camera": "left"}, {"camera": "wrist"}]
