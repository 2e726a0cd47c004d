"""Codec quality on frames rendered from the DROID-like MuJoCo scene."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest
from tests.decode import decode_frame

from fastsim_record.adapters.codecs import encoder_for

pytestmark = pytest.mark.mujoco

U8 = npt.NDArray[np.uint8]


@pytest.fixture(scope="module")
def rendered() -> Iterator[U8]:
    """One 640x480 frame of the exterior camera after a short scripted motion."""
    scene_mod = pytest.importorskip("fastsim_embedded.backends.mujoco_scene")
    scene = scene_mod.MujocoDroidScene(width=640, height=480)
    try:
        for tick in range(20):
            scene.apply_command(scene.scripted_command(tick, 1 / 30))
            scene.advance(1 / 30)
        frame: U8 = scene.render("exterior_left")
        yield frame
    finally:
        scene.close()


def _psnr(a: U8, b: U8) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else float(10.0 * np.log10(255.0**2 / mse))


def test_jpeg_q92_psnr_at_least_40db(rendered: U8) -> None:
    """Default JPEG (q92, 4:4:4) reaches a PSNR of at least 40 dB on a rendered frame."""
    enc = encoder_for(width=640, height=480)
    out = decode_frame(enc.encode(rendered), enc.descriptor)
    assert _psnr(out, rendered) >= 40.0


def test_png_is_pixel_exact_on_rendered_frame(rendered: U8) -> None:
    """PNG round-trips a rendered frame pixel for pixel."""
    enc = encoder_for("png", width=640, height=480)
    assert np.array_equal(decode_frame(enc.encode(rendered), enc.descriptor), rendered)


def test_jpeg_is_much_smaller_than_raw(rendered: U8) -> None:
    """The default JPEG payload is a small fraction of the raw RGB bytes."""
    payload = encoder_for(width=640, height=480).encode(rendered)
    assert len(payload) < rendered.nbytes // 8
