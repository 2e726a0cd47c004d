"""The OpenCV JPEG/PNG adapters behind the encoder port, and the descriptor they record."""

from __future__ import annotations

import json

import numpy as np
import numpy.typing as npt
import pytest
from tests.decode import decode_frame

from fastsim_record.adapters.codecs import (
    JpegEncoder,
    PngEncoder,
    RawRgbEncoder,
    encoder_for,
    encoder_for_camera,
)
from fastsim_record.errors import ConfigError, DescriptorDriftError
from fastsim_record.ports.encoders import FrameEncoder, ImageDescriptor, PayloadError
from fastsim_recording_format import FormatError

U8 = npt.NDArray[np.uint8]


def _frame(height: int = 48, width: int = 64, seed: int = 0) -> U8:
    """A read-only, smooth-ish synthetic RGB frame (like a capture-path buffer)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 3 % 256, y * 5 % 256, (x + y) * 2 % 256], axis=-1)
    noise = rng.integers(0, 8, size=(height, width, 3))
    frame = np.ascontiguousarray((base + noise) % 256, dtype=np.uint8)
    frame.flags.writeable = False
    return frame


def test_default_encoder_is_jpeg_q92_444() -> None:
    """With no encoding and no quality, the factory builds JPEG quality 92, 4:4:4 chroma."""
    enc = encoder_for(width=640, height=480)
    assert isinstance(enc, JpegEncoder)
    assert enc.descriptor.to_dict() == {
        "media_type": "image/jpeg",
        "payload_codec": "jpeg",
        "width": 640,
        "height": 480,
        "color_space": "srgb",
        "lossy": True,
        "quality": 92,
        "jpeg_chroma": "4:4:4",
        "png_compression_level": None,
    }


def test_png_descriptor_is_lossless_level_1() -> None:
    """`encoding: png` records a lossless PNG at compression level 1 and no quality."""
    enc = encoder_for("png", width=32, height=16)
    assert isinstance(enc, PngEncoder)
    d = enc.descriptor
    assert (d.media_type, d.payload_codec, d.lossy) == ("image/png", "png", False)
    assert (d.quality, d.jpeg_chroma, d.png_compression_level) == (None, None, 1)
    assert (d.width, d.height, d.shape) == (32, 16, (16, 32, 3))


def test_descriptor_dict_is_json_and_round_trips() -> None:
    """A descriptor survives JSON and from_dict unchanged, for every codec."""
    for desc in (
        ImageDescriptor.jpeg(64, 48, 75),
        ImageDescriptor.png(64, 48),
        ImageDescriptor.raw_rgb(64, 48),
    ):
        raw = json.loads(json.dumps(desc.to_dict()))
        assert ImageDescriptor.from_dict(raw) == desc


def test_encoders_satisfy_the_port() -> None:
    """Both adapters are FrameEncoders."""
    assert isinstance(encoder_for(width=8, height=8), FrameEncoder)
    assert isinstance(encoder_for("png", width=8, height=8), FrameEncoder)


def test_png_round_trip_is_pixel_exact() -> None:
    """PNG encode then decode returns exactly the RGB pixels, channel order included."""
    frame = _frame(37, 53)
    enc = encoder_for("png", width=53, height=37)
    out = decode_frame(enc.encode(frame), enc.descriptor)
    assert out.dtype == np.uint8
    assert np.array_equal(out, frame)


def test_jpeg_keeps_rgb_channel_order() -> None:
    """A pure red frame decodes red, not blue: RGB->BGR happens inside encode."""
    frame = np.zeros((16, 16, 3), dtype=np.uint8)
    frame[..., 0] = 255
    enc = encoder_for(width=16, height=16)
    out = decode_frame(enc.encode(frame), enc.descriptor)
    assert out[..., 0].min() > 240
    assert out[..., 2].max() < 15


def test_encode_leaves_the_input_untouched() -> None:
    """Encoding a read-only capture buffer neither fails nor mutates it."""
    frame = _frame()
    before = frame.copy()
    encoders = (
        encoder_for(width=64, height=48),
        encoder_for("png", width=64, height=48),
        encoder_for("raw", width=64, height=48),
    )
    for enc in encoders:
        enc.encode(frame)
        enc.encode(frame)
    assert not frame.flags.writeable
    assert np.array_equal(frame, before)


def test_jpeg_quality_changes_size() -> None:
    """An explicit lower quality is honoured: the payload shrinks and the descriptor says so."""
    frame = _frame(96, 128)
    hi = encoder_for(width=128, height=96)
    lo = encoder_for("jpeg", 30, width=128, height=96)
    assert lo.descriptor.quality == 30
    assert len(lo.encode(frame)) < len(hi.encode(frame))


def test_legacy_raw_rgb_payload_decodes() -> None:
    """A 0.3.0-era raw packed RGB payload decodes with width/height from its descriptor."""
    frame = _frame(12, 20)
    legacy = ImageDescriptor.from_dict({"width": 20, "height": 12, "encoding": "raw"})
    assert legacy.payload_codec == "raw_rgb"
    assert np.array_equal(decode_frame(frame.tobytes(), legacy), frame)
    bare = ImageDescriptor.from_dict({"width": 20, "height": 12})
    assert np.array_equal(decode_frame(frame.tobytes(), bare), frame)


def test_legacy_raw_encoding_records_packed_rgb() -> None:
    """`encoding: raw` (what 0.3.0-0.3.5 cameras compile to) writes packed rows, descriptor raw_rgb."""
    frame = _frame(12, 20)
    enc = encoder_for("raw", width=20, height=12)
    assert isinstance(enc, RawRgbEncoder)
    assert enc.descriptor == ImageDescriptor.raw_rgb(20, 12)
    payload = enc.encode(frame)
    assert payload == frame.tobytes()
    assert np.array_equal(decode_frame(payload, ImageDescriptor.from_dict(enc.descriptor.to_dict())), frame)
    strided = np.ascontiguousarray(np.concatenate([frame, frame], axis=1))[:, ::2]
    assert enc.encode(strided) == np.ascontiguousarray(strided).tobytes()
    with pytest.raises(ConfigError, match=r"cameras\.overview\.quality"):
        encoder_for("raw", 92, width=20, height=12, path="cameras.overview")


def test_legacy_raw_rgb_of_wrong_length_is_rejected() -> None:
    """A raw payload whose length is not width*height*3 fails with the byte counts."""
    with pytest.raises(FormatError, match="raw RGB payload of 719 bytes"):
        decode_frame(b"\0" * 719, ImageDescriptor.raw_rgb(20, 12))


def test_payload_not_matching_descriptor_is_rejected() -> None:
    """A JPEG whose header size differs from the recorded descriptor fails closed, before decoding."""
    payload = encoder_for(width=64, height=48).encode(_frame())
    with pytest.raises(FormatError, match="header declares 64x48, the stream descriptor 32x48"):
        decode_frame(payload, ImageDescriptor.jpeg(32, 48))
    with pytest.raises(FormatError, match="does not start with an SOI marker"):
        decode_frame(b"not a jpeg", ImageDescriptor.jpeg(64, 48))


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((48, 64), dtype=np.float32),  # depth
        np.zeros((48, 64, 1), dtype=np.uint16),  # depth in millimetres
        np.zeros((48, 64), dtype=np.uint8),  # segmentation ids
        np.zeros((48, 64, 3), dtype=np.float32),  # normals
        np.zeros((48, 64, 4), dtype=np.uint8),  # RGBA
        np.zeros((64, 48, 3), dtype=np.uint8),  # transposed
    ],
    ids=["depth-f32", "depth-u16", "segmentation", "normals", "rgba", "wrong-size"],
)
def test_non_rgb_input_is_rejected(bad: U8) -> None:
    """Anything but uint8 (H, W, 3) of the descriptor's size is refused with a clear error."""
    encoders = (
        encoder_for(width=64, height=48),
        encoder_for("png", width=64, height=48),
        encoder_for("raw", width=64, height=48),
    )
    for enc in encoders:
        with pytest.raises(DescriptorDriftError, match=r"frame: expected uint8 RGB of shape \(48, 64, 3\)"):
            enc.encode(bad)


def test_non_array_input_is_rejected() -> None:
    """Raw bytes are not a frame: the encoder names the type it got."""
    with pytest.raises(DescriptorDriftError, match="got bytes"):
        encoder_for(width=4, height=4).encode(b"\0" * 48)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("encoding", "quality", "field"),
    [
        ("jpeg", 0, "cameras.overview.quality"),
        ("jpeg", 101, "cameras.overview.quality"),
        ("jpeg", True, "cameras.overview.quality"),
        ("png", 92, "cameras.overview.quality"),
        ("webp", None, "cameras.overview.encoding"),
    ],
)
def test_factory_rejects_bad_settings(encoding: str, quality: int | None, field: str) -> None:
    """Out-of-range quality, quality with PNG and unknown encodings name the config field."""
    with pytest.raises(ConfigError, match=field):
        encoder_for(encoding, quality, width=8, height=8, path="cameras.overview")


def test_factory_accepts_a_camera_settings_object() -> None:
    """A config object with `.encoding` and `.quality` builds the matching encoder."""

    class Camera:
        encoding = "jpeg"
        quality = 80

    enc = encoder_for_camera(Camera(), width=8, height=8)
    assert enc.descriptor.quality == 80


def test_invalid_recorded_descriptor_is_rejected() -> None:
    """A recorded descriptor breaking the rule table fails naming the field."""
    raw = ImageDescriptor.jpeg(8, 8).to_dict()
    raw["jpeg_chroma"] = "4:2:0"
    with pytest.raises(PayloadError, match="jpeg_chroma"):
        ImageDescriptor.from_dict(raw)
    raw = ImageDescriptor.png(8, 8).to_dict()
    del raw["png_compression_level"]
    with pytest.raises(PayloadError, match="png_compression_level"):
        ImageDescriptor.from_dict(raw)
