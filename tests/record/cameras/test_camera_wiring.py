"""Camera selection at prepare: declared channels decide the encoder, bad declarations are config errors."""

from __future__ import annotations

from typing import Any, cast

import attrs
import pytest

from fastsim_contract.protocols import RunContext
from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.synthetic_cameras import camera_descriptors
from fastsim_record.camera_wiring import select_cameras
from fastsim_record.config.model import CameraConfig, RecordConfig, StreamsConfig
from fastsim_record.errors import ConfigError


@attrs.frozen
class _Run:
    channels: tuple[ChannelDescriptor, ...]


def _config(**cameras: CameraConfig) -> RecordConfig:
    return attrs.evolve(RecordConfig(), streams=StreamsConfig(cameras=cameras))


def _cam(name: str, **extra: Any) -> CameraConfig:
    base = f"sensors.{name}.camera"
    return CameraConfig(
        rgb=f"{base}.rgb", intrinsics=f"{base}.intrinsics",
        translation=f"{base}.extrinsics.translation",
        quaternion_xyzw=f"{base}.extrinsics.quaternion_xyzw", **extra,
    )


def _run(*channels: ChannelDescriptor) -> RunContext:
    return cast(RunContext, _Run(tuple(channels)))


def test_no_camera_alias_selects_nothing() -> None:
    """Without camera aliases there is no camera selection (no media lane, pump or grant)."""
    assert select_cameras(RecordConfig(), _run(*camera_descriptors("a", 64, 48))) is None


def test_selection_sizes_the_encoder_from_the_declared_rgb_channel() -> None:
    """The RGB channel's declared (H, W, 3) fixes the encoder; the cut keys are per channel."""
    selection = select_cameras(
        _config(a=_cam("a"), b=_cam("b", encoding="png", required=False)),
        _run(*camera_descriptors("a", 64, 48), *camera_descriptors("b", 32, 24)),
    )
    assert selection is not None
    setups = {s.alias: s for s in selection.stage.setups}
    assert (setups["a"].encoder.descriptor.width, setups["a"].encoder.descriptor.height) == (64, 48)
    assert setups["b"].encoder.descriptor.payload_codec == "png"
    assert selection.aliases == {"a": True, "b": False}
    assert selection.spec.required
    assert selection.spec.lane == "media"
    assert "cameras.b.quaternion_xyzw" in selection.channel_keys
    assert len(selection.channel_keys) == 8


def test_undeclared_channel_is_a_config_error() -> None:
    """A camera alias naming a channel the scene does not declare is rejected at prepare."""
    with pytest.raises(ConfigError, match=r"cameras\.a\.rgb: channel 'sensors\.a\.camera\.rgb'"):
        select_cameras(_config(a=_cam("a")), _run())


def test_depth_channel_never_reaches_the_rgb_encoder() -> None:
    """An alias whose rgb names a float depth channel is a config error, not a JPEG stream."""
    channels = list(camera_descriptors("a", 64, 48))
    channels[0] = ChannelDescriptor("sensors.a.camera.rgb", "depth", "float32", (48, 64), ("m",))
    with pytest.raises(ConfigError, match=r"cameras\.a\.rgb:.*only 'rgb' channels"):
        select_cameras(_config(a=_cam("a")), _run(*channels))


@pytest.mark.parametrize("kind", ["depth", "segmentation", "normals"])
def test_rgb_shaped_non_rgb_channel_never_reaches_the_rgb_encoder(kind: str) -> None:
    """A uint8 (H, W, 3) channel of a non-RGB kind is refused by its kind alone, at prepare."""
    channels = list(camera_descriptors("a", 64, 48))
    channels[0] = attrs.evolve(channels[0], kind=kind)
    with pytest.raises(ConfigError, match=rf"cameras\.a\.rgb:.*declared kind '{kind}'"):
        select_cameras(_config(a=_cam("a")), _run(*channels))


def test_wrong_calibration_channel_shape_is_a_config_error() -> None:
    """A quaternion channel declared with three elements is rejected at prepare."""
    channels = list(camera_descriptors("a", 64, 48))
    channels[3] = attrs.evolve(channels[3], shape=(3,))
    with pytest.raises(ConfigError, match=r"cameras\.a\.quaternion_xyzw: .*float64\[4\]"):
        select_cameras(_config(a=_cam("a")), _run(*channels))
