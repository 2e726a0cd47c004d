"""Grey and RGBA cameras (docs/fsr-format.md 9.2) in each exporter.

MCAP and Rerun carry the recorded PNG bytes as they are (a mono image; an RGBA image with its
alpha); LeRobot (rule 7 of ``to_lerobot``) puts a grey camera's value in R, G and B and drops an
RGBA camera's alpha.  The MCAP/Rerun file is a calibrated camera file written through Record's
camera encoder (``write_camera_fsr``); the LeRobot one a real Gymnasium recording."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

import fastsim_record as fr
from fastsim_record.adapters.codecs import JpegEncoder, PngEncoder
from fastsim_record.cli import main
from fastsim_record.export._source import encoded_frames
from fastsim_record.testing.cameras import write_camera_fsr

PLAN = [(0, 1, 58.0), (0, 2, 58.0), (0, 3, 58.0), (1, 4, 58.0)]


@pytest.fixture(scope="module")
def channels_fsr(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[tuple[str, int], np.ndarray]]:
    """A calibrated grey, RGBA and RGB camera, four ticks in two generations."""
    path = tmp_path_factory.mktemp("channels") / "cameras.fsr"
    frames = write_camera_fsr(
        path, {"grey": PngEncoder(64, 48, channels=1), "rgba": PngEncoder(64, 48, channels=4), "rgb": JpegEncoder(64, 48)},
        PLAN,
    )
    return path, frames


def _decoded(data: bytes) -> np.ndarray:
    """A PNG as any viewer decodes it: grey as (H, W, 1), BGRA turned into RGBA."""
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert image is not None
    return image[..., None] if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGRA2RGBA)


def test_mcap_carries_the_grey_and_rgba_png_bytes_as_recorded(
    channels_fsr: tuple[Path, dict[tuple[str, int], np.ndarray]], tmp_path: Path,
) -> None:
    """CompressedImage per frame: the recorded PNG bytes, format png, decoding to the recorded grey / RGBA pixels."""
    pytest.importorskip("foxglove", reason="the mcap extra (foxglove-sdk) is not installed")
    mcap_reader = pytest.importorskip("mcap.reader")
    decoder = pytest.importorskip("mcap_protobuf.decoder", reason="mcap-protobuf-support is not installed")
    path, frames = channels_fsr
    out = tmp_path / "x.mcap"
    assert main(["export", str(path), "--to", "mcap", "-o", str(out), "--include", "all", "--quiet"]) == 0
    rec = fr.open(path)
    for cam in ("grey", "rgba"):
        reader = mcap_reader.make_reader(out.open("rb"), validate_crcs=True, decoder_factories=[decoder.DecoderFactory()])
        got = [(m.data, m.format) for _, _, _, m in reader.iter_decoded_messages(topics=[f"/camera/{cam}/image"])]
        assert [g[0] for g in got] == [f.data for f in encoded_frames(rec, cam)]
        assert {g[1] for g in got} == {"png"}
        for (data, _), (_, tick, _) in zip(got, PLAN, strict=True):
            np.testing.assert_array_equal(_decoded(data), frames[(cam, tick)])


def test_rerun_carries_the_grey_and_rgba_png_bytes_as_recorded(
    channels_fsr: tuple[Path, dict[tuple[str, int], np.ndarray]], tmp_path: Path,
) -> None:
    """EncodedImage per frame: the recorded PNG bytes (media type image/png), decoding to the recorded pixels."""
    pytest.importorskip("rerun", reason="the rerun extra (rerun-sdk) is not installed")
    from rerun.chunk import RrdReader

    path, frames = channels_fsr
    out = tmp_path / "x.rrd"
    assert main(["export", str(path), "--to", "rerun", "-o", str(out), "--include", "all", "--quiet"]) == 0
    rec = fr.open(path)
    for cam in ("grey", "rgba"):
        blobs: list[bytes] = []
        media: set[str] = set()
        for chunk in RrdReader(str(out)).stream().to_chunks():
            if chunk.entity_path != f"/world/cameras/{cam}/image":
                continue
            batch = chunk.to_record_batch()
            for col in batch.schema.names:
                if col.endswith("blob"):
                    blobs += [bytes(b[0]) for b in batch.column(col).to_pylist()]
                if col.endswith("media_type"):
                    media |= {m[0] for m in batch.column(col).to_pylist()}
        assert blobs == [f.data for f in encoded_frames(rec, cam)]
        assert media == {"image/png"}
        for data, (_, tick, _) in zip(blobs, PLAN, strict=True):
            np.testing.assert_array_equal(_decoded(data), frames[(cam, tick)])


def test_lerobot_puts_grey_in_r_g_b_and_drops_the_alpha(tmp_path: Path) -> None:
    """A Gymnasium recording with a grey ``mask`` and an RGBA ``rgba`` camera: 3-channel video features; the mask's video frames are grey (R = G = B) and close to the mask, the RGBA's close to its R, G, B."""
    pytest.importorskip("av", reason="the lerobot extra (PyAV) is not installed")
    from tests.record.export.lerobot_rules import LeRobotRules, psnr
    from tests.record.gym.envs import ImageEnv
    from tests.record.gym.play import play

    from fastsim_record.gym import RecordEpisodes

    env = RecordEpisodes(ImageEnv(), tmp_path / "eps")
    (played,) = play(env, [4])
    env.close()
    assert main(["export", str(tmp_path / "eps"), "--to", "lerobot", "-o", str(tmp_path / "lr"),
                 "--video-codec", "h264", "--quiet"]) == 0
    info = json.loads((tmp_path / "lr" / "meta" / "info.json").read_text())
    for cam in ("mask", "rgba"):
        feature = info["features"][f"observation.images.{cam}"]
        assert (feature["dtype"], feature["shape"], feature["info"]["video.channels"]) == ("video", [24, 32, 3], 3)
    dataset = LeRobotRules(tmp_path / "lr")
    assert len(dataset.data) == len(played.observations)
    for row, observation in zip(dataset.data, played.observations, strict=True):
        mask = dataset.frame("observation.images.mask", row).astype(int)
        assert np.abs(mask - mask[..., :1]).max() <= 2  # grey: one value in R, G and B (yuv420p chroma neutral)
        assert psnr(mask[..., 0].astype(np.uint8), observation["mask"]) > 25
        rgb = dataset.frame("observation.images.rgba", row)
        assert psnr(rgb, observation["rgba"][..., :3]) > 25
