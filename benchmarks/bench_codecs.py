"""Camera codec throughput at 640x480: frames/s per core against plain ``cv2.imencode``.

Usage: ``python benchmarks/bench_codecs.py [--rounds 7] [--frames 60]``

The frame is rendered from the DROID-like MuJoCo scene (a synthetic gradient when MuJoCo
or a GL context is unavailable).  Every codec runs on one thread; rounds are interleaved
and the median is reported.  "CPU" is process CPU time, so work OpenCV hands to its
thread pool (and the pool's spinning) is charged; frames/s per core = frames / CPU s.

Baselines, measured in the same process:
  * ``imencode jpeg``: ``cv2.imencode('.jpg', bgr, q92, 4:4:4)`` on a ready BGR frame;
  * ``imencode png``:  ``cv2.imencode('.png', bgr, level 1)`` on a ready BGR frame.
The adapters take the immutable RGB frame: ``JpegEncoder`` hands it to simplejpeg as RGB,
``PngEncoder`` converts it to BGR inside ``encode``.  "vs baseline" is baseline CPU time
over the row's CPU time (above 1: faster than plain ``cv2.imencode``).  Two OpenCV RGB
paths are shown for the JPEG codec choice.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import cv2
import numpy as np
import numpy.typing as npt
from _report import Figures, add_json_flag

from fastsim_record.adapters.codecs import encoder_for
from fastsim_recording_format.reading._codecs import ImageCodec, decode_image

U8 = npt.NDArray[np.uint8]
WIDTH, HEIGHT, QUALITY = 640, 480, 92


def rendered_frame() -> tuple[U8, str]:
    """A 640x480 RGB frame from the MuJoCo scene mid-motion, or a synthetic one."""
    try:
        from fastsim_embedded.backends.mujoco_scene import MujocoDroidScene

        scene = MujocoDroidScene(width=WIDTH, height=HEIGHT)
        try:
            for tick in range(20):
                scene.apply_command(scene.scripted_command(tick, 1 / 30))
                scene.advance(1 / 30)
            return scene.render("exterior_left"), "MuJoCo exterior_left"
        finally:
            scene.close()
    except Exception as exc:  # no MuJoCo or no GL: still benchmark the codecs
        y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
        frame = np.stack([x * 0.4 % 256, y * 0.5 % 256, (x + y) * 0.2 % 256], axis=-1)
        out = np.ascontiguousarray(frame, dtype=np.uint8)
        out.flags.writeable = False
        return out, f"synthetic ({type(exc).__name__})"


def measure(fn: Callable[[], object], frames: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per frame over ``frames`` calls."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(frames):
        fn()
    return (time.process_time() - cpu) / frames, (time.perf_counter() - wall) / frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--frames", type=int, default=60)
    add_json_flag(parser)
    args = parser.parse_args()

    rgb, source = rendered_frame()
    bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    jpeg_params = [
        cv2.IMWRITE_JPEG_QUALITY, QUALITY,
        cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444,
    ]
    png_params = [cv2.IMWRITE_PNG_COMPRESSION, 1]
    jpeg, png = encoder_for(width=WIDTH, height=HEIGHT), encoder_for("png", width=WIDTH, height=HEIGHT)

    scratch = np.empty_like(rgb)
    strip = 16

    def opencv_rgb_jpeg() -> object:
        """The OpenCV alternative to JpegEncoder: strip RGB->BGR, then imencode."""
        for top in range(0, HEIGHT, strip):
            cv2.cvtColor(rgb[top : top + strip], cv2.COLOR_RGB2BGR, dst=scratch[top : top + strip])
        return cv2.imencode(".jpg", scratch, jpeg_params)

    cases: dict[str, Callable[[], object]] = {
        "imencode jpeg (baseline)": lambda: cv2.imencode(".jpg", bgr, jpeg_params),
        "JpegEncoder (simplejpeg) q92 444": lambda: jpeg.encode(rgb),
        "OpenCV RGB->BGR strips + jpeg": opencv_rgb_jpeg,
        "OpenCV whole-frame cvtColor+jpeg": lambda: cv2.imencode(
            ".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), jpeg_params
        ),
        "imencode png (baseline)": lambda: cv2.imencode(".png", bgr, png_params),
        "PngEncoder level 1": lambda: png.encode(rgb),
    }

    for fn in cases.values():  # warm up (allocations, code paths)
        fn()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, fn in cases.items():
            samples[name].append(measure(fn, args.frames))
    cpu = {n: statistics.median(c for c, _ in s) for n, s in samples.items()}
    wall = {n: statistics.median(w for _, w in s) for n, s in samples.items()}

    decoded = decode_image(np.frombuffer(jpeg.encode(rgb), np.uint8), ImageCodec("jpeg", WIDTH, HEIGHT), 0)
    mse = float(np.mean((decoded.astype(np.float64) - rgb.astype(np.float64)) ** 2))
    print(f"frame: {WIDTH}x{HEIGHT} {source}; OpenCV {cv2.__version__}, "
          f"cv2 threads {cv2.getNumThreads()}; {args.rounds} rounds x {args.frames} frames")
    print(f"payload: jpeg {len(jpeg.encode(rgb))} B (PSNR {10 * np.log10(255**2 / mse):.1f} dB), "
          f"png {len(png.encode(rgb))} B, raw {rgb.nbytes} B")
    print(f"{'codec':34} {'ms/frame CPU':>12} {'wall':>7} {'frames/s/core':>14} {'vs baseline':>12}")
    for name in cases:
        base = "imencode png (baseline)" if "png" in name.lower() else "imencode jpeg (baseline)"
        ratio = cpu[base] / cpu[name]
        print(f"{name:34} {cpu[name] * 1e3:12.3f} {wall[name] * 1e3:7.3f} "
              f"{1 / cpu[name]:14.0f} {ratio:11.2f}x")
    figures = Figures("bench_codecs")
    for name in cases:
        key = "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
        while "__" in key:
            key = key.replace("__", "_")
        figures.add(f"{key}_cpu_ms_per_frame", cpu[name] * 1e3)
    figures.emit(args.json)


if __name__ == "__main__":
    main()
