"""Grey and RGBA camera images (docs/fsr-format.md 9.2): the descriptor's ``channels``, the PNG
IHDR colour-type check before decoding, exact round trips, and what stays as FSR 1.2 had it."""

from __future__ import annotations

import struct
from typing import Any, cast

import attrs
import cv2
import numpy as np
import numpy.typing as npt
import pytest
from tests.decode import decode_frame

from fastsim_contract.protocols import RunContext
from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.synthetic_cameras import camera_descriptors
from fastsim_record.adapters.codecs import PngEncoder, encoder_for
from fastsim_record.camera_wiring import select_cameras
from fastsim_record.config.model import CameraConfig, RecordConfig, StreamsConfig
from fastsim_record.errors import ConfigError, DescriptorDriftError
from fastsim_record.ports.encoders import ImageDescriptor, PayloadError
from fastsim_recording_format import FormatError, StreamSpec
from fastsim_recording_format.reading._codecs import image_codec
from fastsim_recording_format.reading._errors import BadRecording

U8 = npt.NDArray[np.uint8]


def _image(channels: int, height: int = 48, width: int = 64, seed: int = 0) -> U8:
    image = np.random.default_rng(seed).integers(0, 256, (height, width, channels), dtype=np.uint8)
    image.flags.writeable = False
    return image


def _ihdr(payload: bytes) -> tuple[int, int]:
    """(bit depth, colour type) of a PNG payload."""
    depth, colour = struct.unpack_from(">BB", payload, 24)
    return depth, colour


@pytest.mark.parametrize(("channels", "colour"), [(1, 0), (4, 6)], ids=["grey", "rgba"])
def test_grey_and_rgba_png_round_trip_bit_exact(channels: int, colour: int) -> None:
    """A 1-/4-channel PngEncoder writes colour type 0/6, depth 8; the reader gives back (H, W, C) exactly, alpha included."""
    encoder = PngEncoder(64, 48, channels=channels)
    frame = _image(channels)
    payload = encoder.encode(frame)
    assert _ihdr(payload) == (8, colour)
    assert encoder.descriptor.to_dict()["channels"] == channels
    decoded = decode_frame(payload, encoder.descriptor)
    assert decoded.shape == (48, 64, channels)
    np.testing.assert_array_equal(decoded, frame)
    assert ImageDescriptor.from_dict(encoder.descriptor.to_dict()) == encoder.descriptor


def test_an_rgb_descriptor_is_the_fsr_1_2_one_and_an_old_one_reads_as_3_channels() -> None:
    """RGB descriptors carry no ``channels`` key (byte for byte FSR 1.2's); a descriptor without it is 3-channel."""
    for codec in ("jpeg", "png", "raw"):
        d = encoder_for(codec, width=32, height=16).descriptor
        assert "channels" not in d.to_dict()
        assert d.shape == (16, 32, 3)
        assert ImageDescriptor.from_dict(d.to_dict()).channels == 3
        spec = StreamSpec(0, "cameras.a.rgb", "camera.rgb", d.to_dict())
        assert image_codec(spec).channels == 3


@pytest.mark.parametrize("channels", [1, 4])
def test_jpeg_and_raw_rgb_are_3_channel_only(channels: int) -> None:
    """JPEG or raw RGB with 1 or 4 channels: a ConfigError naming ``encoding``, a descriptor error, and a reader refusal, each one line."""
    for encoding in ("jpeg", "raw"):
        with pytest.raises(ConfigError) as caught:
            encoder_for(encoding, width=8, height=8, path="cameras.mask", channels=channels)
        assert len(caught.value.issues) == 1
        assert str(caught.value) == (
            f"cameras.mask.encoding: must be 'png' for a {channels}-channel "
            f"({'grey' if channels == 1 else 'RGBA'}) image, got {encoding!r} (JPEG and raw RGB are 3-channel)")
    with pytest.raises(PayloadError, match=r"^image descriptor channels: a \d-channel .* must be png, not jpeg"):
        attrs.evolve(ImageDescriptor.jpeg(8, 8), channels=channels).check()
    raw = {**ImageDescriptor.jpeg(8, 8).to_dict(), "channels": channels}
    with pytest.raises(BadRecording, match=r"^stream 'cameras\.a\.rgb' codec: .*must be png, not jpeg") as refused:
        image_codec(StreamSpec(0, "cameras.a.rgb", "camera.rgb", raw))
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("bad", [2, 0, "1", True, 3.0, [1], None])
def test_a_channels_value_other_than_1_3_4_is_a_bad_descriptor(bad: Any) -> None:
    """``channels`` must be the integer 1, 3 or 4: anything else is refused by the reader and by the recorder's descriptor."""
    raw = {**ImageDescriptor.png(8, 8).to_dict(), "channels": bad}
    with pytest.raises(BadRecording, match=r"codec: image descriptor channels: must be 1, 3 or 4"):
        image_codec(StreamSpec(0, "cameras.a.rgb", "camera.rgb", raw))
    with pytest.raises(PayloadError, match="channels: must be 1, 3 or 4"):
        ImageDescriptor.from_dict(raw)


@pytest.mark.parametrize(
    ("channels", "wrong", "colour"),
    [(1, 3, 2), (4, 3, 2), (4, 1, 0), (1, 4, 6)],
    ids=["grey-stream-rgb-png", "rgba-stream-rgb-png", "rgba-stream-grey-png", "grey-stream-rgba-png"],
)
def test_an_ihdr_colour_type_other_than_the_descriptors_is_refused_before_decoding(
    channels: int, wrong: int, colour: int,
) -> None:
    """A PNG whose IHDR colour type is not the stream's is refused from its header alone: its pixel data is cut off and never reached."""
    payload = PngEncoder(16, 8, channels=wrong).encode(_image(wrong, 8, 16))
    header_only = payload[:33] + b"\0" * 16  # signature + IHDR, then no image data at all
    descriptor = ImageDescriptor.png(16, 8, channels=channels)
    expected = 0 if channels == 1 else 6
    for data in (payload, header_only):
        with pytest.raises(FormatError, match=(
            rf"^frame payload: PNG IHDR declares colour type {colour}, bit depth 8 \(byte 24\); the stream is "
            rf"{channels}-channel \(\w+\): colour type {expected}, bit depth 8 expected at offset 0$"
        )):
            decode_frame(data, descriptor)


def test_a_16_bit_grey_png_is_refused_on_a_grey_stream() -> None:
    """A 16-bit grey PNG (depth images are numeric channels, never camera frames) is refused by its header."""
    ok, png = cv2.imencode(".png", np.zeros((8, 16), np.uint16))
    assert ok
    with pytest.raises(FormatError, match="bit depth of 16"):
        decode_frame(bytes(png.data), ImageDescriptor.png(16, 8, channels=1))


def test_a_3_channel_stream_keeps_fsr_1_2_rule_3_which_is_what_an_older_reader_does() -> None:
    """Backward compatibility: a grey or RGBA PNG payload in an RGB (3-channel) stream decodes to RGB as an FSR 1.2 reader did; this is also what a 1.2 reader, which ignores ``channels``, makes of a grey (value in R, G, B) or RGBA (alpha dropped) camera (docs/fsr-format.md 9.2)."""
    grey, rgba = _image(1, 8, 16), _image(4, 8, 16, seed=1)
    decoded = decode_frame(PngEncoder(16, 8, channels=1).encode(grey), ImageDescriptor.png(16, 8))
    assert decoded.shape == (8, 16, 3)
    np.testing.assert_array_equal(decoded, np.repeat(grey, 3, axis=2))
    decoded = decode_frame(PngEncoder(16, 8, channels=4).encode(rgba), ImageDescriptor.png(16, 8))
    np.testing.assert_array_equal(decoded, rgba[..., :3])


@pytest.mark.parametrize("channels", [1, 4])
def test_a_frame_of_other_channels_is_descriptor_drift(channels: int) -> None:
    """A grey/RGBA encoder refuses an RGB frame (and the other way round) by shape, naming the model."""
    model = "grey" if channels == 1 else "RGBA"
    with pytest.raises(DescriptorDriftError, match=rf"frame: expected uint8 {model} of shape \(48, 64, {channels}\)"):
        PngEncoder(64, 48, channels=channels).encode(_image(3))
    with pytest.raises(DescriptorDriftError, match=r"frame: expected uint8 RGB of shape \(48, 64, 3\)"):
        PngEncoder(64, 48).encode(_image(channels))


def _cam(encoding: str) -> CameraConfig:
    base = "sensors.a.camera"
    return CameraConfig(rgb=f"{base}.rgb", intrinsics=f"{base}.intrinsics", translation=f"{base}.extrinsics.translation",
                        quaternion_xyzw=f"{base}.extrinsics.quaternion_xyzw", encoding=encoding)


@attrs.frozen
class _Run:
    channels: tuple[ChannelDescriptor, ...]


@pytest.mark.parametrize("channels", [1, 4])
def test_record_config_takes_a_grey_or_rgba_camera_as_png_and_refuses_jpeg(channels: int) -> None:
    """A scene channel of kind rgb declared (H, W, 1) or (H, W, 4): ``encoding: png`` records it with that many channels; ``jpeg`` (the default) is one ConfigError naming the alias's encoding."""
    declared = list(camera_descriptors("a", 64, 48))
    declared[0] = attrs.evolve(declared[0], shape=(48, 64, channels))
    run = cast(RunContext, _Run(tuple(declared)))
    selection = select_cameras(attrs.evolve(RecordConfig(), streams=StreamsConfig(cameras={"a": _cam("png")})), run)
    assert selection is not None
    (setup,) = selection.stage.setups
    assert setup.encoder.descriptor.shape == (48, 64, channels)
    with pytest.raises(ConfigError) as caught:
        select_cameras(attrs.evolve(RecordConfig(), streams=StreamsConfig(cameras={"a": _cam("jpeg")})), run)
    assert [i.path for i in caught.value.issues] == ["plugins.record.config.streams.cameras.a.encoding"]
    declared[0] = attrs.evolve(declared[0], shape=(48, 64, 2))
    with pytest.raises(ConfigError, match=r"cameras\.a\.rgb: .*must be uint8 \(H, W, 3\), or \(H, W, 1\) grey"):
        select_cameras(attrs.evolve(RecordConfig(), streams=StreamsConfig(cameras={"a": _cam("png")})),
                       cast(RunContext, _Run(tuple(declared))))


@pytest.mark.parametrize(("bad", "codec"), [([1], "png"), ({"n": 1}, "png"), (3.0, "png"), (True, "png"), (1, "jpeg")],
                         ids=["list", "dict", "float", "bool", "grey-jpeg"])
def test_fsr_info_names_no_channels_for_a_hostile_descriptor_and_never_raises(
    bad: Any, codec: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """A descriptor every reader refuses (channels [1], {...}, 3.0, true, 1 with jpeg): fsr info says null, never raises."""
    # audit40: was a TypeError traceback, or '3.0 channels (RGB)'.
    from fastsim_record.cli import main
    from fastsim_record.testing.cameras import write_camera_fsr
    from fastsim_recording_format import FsrReader
    from fastsim_recording_format.reading.summary import summary

    plain = ImageDescriptor.to_dict
    monkeypatch.setattr(ImageDescriptor, "to_dict", lambda self: {**plain(self), "channels": bad})
    path = tmp_path / "hostile.fsr"
    write_camera_fsr(path, {"a": encoder_for(codec, width=16, height=8)}, [(0, 0, 60.0)])
    monkeypatch.undo()
    with FsrReader(str(path)) as reader:
        assert summary(reader)["cameras"]["a"]["channels"] is None
    assert main(["info", str(path)]) == 0
    assert "channel" not in capsys.readouterr().out
