"""Image payloads are checked from their JPEG SOF / PNG IHDR header before anything is decoded."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import simplejpeg
from tests.decode import decode_frame

from fastsim_record.adapters.codecs import PngEncoder
from fastsim_record.ports.encoders import ImageDescriptor
from fastsim_recording_format.codecs.image import MAX_FRAME_PIXELS, jpeg_size, png_size
from fastsim_recording_format.errors import FormatError

from .support import MIB, run_fsr, write_camera_file

W, H = 64, 48


def _jpeg(width: int = W, height: int = H) -> bytes:
    frame = np.random.default_rng(1).integers(0, 255, (height, width, 3), np.uint8)
    return bytes(simplejpeg.encode_jpeg(frame, quality=92, colorspace="RGB", colorsubsampling="444"))


def _forge_sof(jpeg: bytes, width: int, height: int) -> bytes:
    at = jpeg.index(b"\xff\xc0")
    return jpeg[: at + 5] + struct.pack(">HH", height, width) + jpeg[at + 9 :]


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _blank_png(width: int, height: int) -> bytes:
    """A real, valid all-black RGB PNG of any size, built row by row (small in memory)."""
    deflate = zlib.compressobj(9)
    row = bytes(1 + 3 * width)
    body = b"".join(deflate.compress(row) for _ in range(height)) + deflate.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", body) + _png_chunk(b"IEND", b"")


def test_header_sizes_of_real_encodings() -> None:
    """The SOF and IHDR parsers read the dimensions the encoders wrote."""
    assert jpeg_size(_jpeg(70, 30)) == (70, 30)
    png = PngEncoder(33, 17).encode(np.zeros((17, 33, 3), np.uint8))
    assert png_size(png) == (33, 17)


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        (b"GIF89a....", "SOI"),
        (b"\xff\xd8\xff\xda\x00\x02", "SOS before a SOF"),
        (b"\xff\xd8\xff\xe0\xff\xff", "bad length"),
        (b"\xff\xd8", "no SOF"),
    ],
)
def test_malformed_jpeg_headers_are_refused(payload: bytes, fragment: str) -> None:
    """A payload that is not a sequential JPEG up to its SOF is one FormatError line."""
    with pytest.raises(FormatError, match=fragment):
        decode_frame(payload, ImageDescriptor.jpeg(W, H))


def test_a_png_in_a_jpeg_stream_is_refused() -> None:
    """The codec the descriptor names is the one whose header is parsed (no format sniffing)."""
    png = PngEncoder(W, H).encode(np.zeros((H, W, 3), np.uint8))
    with pytest.raises(FormatError, match="SOI"):
        decode_frame(png, ImageDescriptor.jpeg(W, H))


def test_a_frame_above_the_pixel_bound_is_refused_before_decoding() -> None:
    """A descriptor and header that agree on more than MAX_FRAME_PIXELS are still refused."""
    side = 9000
    assert side * side > MAX_FRAME_PIXELS
    with pytest.raises(FormatError, match="pixel frame bound"):
        decode_frame(_forge_sof(_jpeg(), side, side), ImageDescriptor.jpeg(side, side))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> int:
    """Peak RSS of ``fsr frames`` on three small valid frames: the interpreter's share."""
    tmp = tmp_path_factory.mktemp("baseline")
    good = tmp / "good.fsr"
    write_camera_file(good, ImageDescriptor.jpeg(W, H), [_jpeg()] * 3)
    code, err, peak = run_fsr("frames", str(good), "--camera", "cam", "-o", str(tmp / "good"))
    assert code == 0, err
    return peak


def _frame_bound(baseline: int, width: int, height: int) -> int:
    return baseline + 3 * width * height * 3 + 16 * MIB


@pytest.mark.parametrize("side", [30000, 65500])
def test_a_forged_jpeg_sof_is_refused_with_its_offset_in_bounded_memory(tmp_path: Path, baseline: int, side: int) -> None:
    """A JPEG whose SOF claims side x side in a 64x48 stream: exit 1, its offset, no big allocation."""
    path = tmp_path / "forged.fsr"
    write_camera_file(path, ImageDescriptor.jpeg(W, H), [_jpeg(), _forge_sof(_jpeg(), side, side)])
    code, err, peak = run_fsr("frames", str(path), "--camera", "cam", "-o", str(tmp_path / "out"))
    assert code == 1
    assert len(err.splitlines()) == 1
    assert f"{side}x{side}" in err
    assert "record at offset" in err
    assert "Traceback" not in err
    assert peak <= _frame_bound(baseline, W, H), (peak, baseline)


def test_a_real_12000_square_png_in_a_small_stream_is_refused_in_bounded_memory(tmp_path: Path, baseline: int) -> None:
    """A valid 12000x12000 PNG (under 1 MB) in a 64x48 stream is refused from its IHDR."""
    big = _blank_png(12000, 12000)
    assert len(big) < MIB
    path = tmp_path / "big.fsr"
    write_camera_file(path, ImageDescriptor.png(W, H), [big])
    code, err, peak = run_fsr("frames", str(path), "--camera", "cam", "-o", str(tmp_path / "out"))
    assert code == 1
    assert "12000x12000" in err
    assert "record at offset" in err
    assert peak <= _frame_bound(baseline, W, H), (peak, baseline)


def test_frames_of_a_large_declared_png_stay_within_three_frames(tmp_path: Path, baseline: int) -> None:
    """Decoding honest 3000x3000 PNG frames peaks at no more than 3 frames above the interpreter."""
    side = 3000
    path = tmp_path / "honest.fsr"
    write_camera_file(path, ImageDescriptor.png(side, side), [_blank_png(side, side)] * 2)
    code, err, peak = run_fsr("frames", str(path), "--camera", "cam", "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert peak <= _frame_bound(baseline, side, side), (peak, baseline)


def test_a_descriptor_above_the_pixel_bound_is_refused_by_frames(tmp_path: Path) -> None:
    """A stream whose descriptor itself declares 65500x65500 is refused before any record is read."""
    path = tmp_path / "huge.fsr"
    write_camera_file(path, ImageDescriptor.jpeg(65500, 65500), [_forge_sof(_jpeg(), 65500, 65500)])
    code, err, _ = run_fsr("frames", str(path), "--camera", "cam", "-o", str(tmp_path / "out"))
    assert code == 1
    assert "pixel frame bound" in err
    assert len(err.splitlines()) == 1


def test_libjpeg_warnings_never_reach_the_terminal(tmp_path: Path) -> None:
    """A JPEG with damaged entropy data prints no native 'Corrupt JPEG data' lines from fsr frames."""
    good = _jpeg()
    damaged = good[: len(good) // 2] + good[-2:]
    path = tmp_path / "damaged.fsr"
    write_camera_file(path, ImageDescriptor.jpeg(W, H), [damaged, good])
    code, err, _ = run_fsr("frames", str(path), "--camera", "cam", "-o", str(tmp_path / "out"))
    assert code in (0, 1)
    assert "Corrupt JPEG" not in err
    assert len(err.splitlines()) <= 1
