"""The recordings and readers ``bench_read.py`` compares: what each case writes and how each
side reads it (``fsr record`` runs, the MCAP copy, the DROID-sized file, the AV1 copy of a
camera).  Split out of ``bench_read.py``, which measures them."""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

import fastsim_record as fr
from fastsim_record.cli import main as fsr_main

ROOT = Path(__file__).resolve().parents[1]


def _record(run: dict[str, Any], out: Path, duration: float) -> Path:
    target = out / "episode.fsr"
    if target.exists():
        return target
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.yaml").write_text(yaml.safe_dump(run))
    if fsr_main(["record", str(out / "run.yaml"), "--output-dir", str(out), "--duration", str(duration)]) != 0:
        raise SystemExit(f"fsr record failed for {out}")
    return target


def numeric_recording(workdir: Path, hours: float) -> Path:
    """``fsr record``: synthetic backend, 120 Hz, 90 numeric channels."""
    run = {
        "schema": "fastsim/2", "name": "bench-read", "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}},
                               "synthetic": {"numeric_channels": 90, "dof": 1}}},
        "runtime": {"sensor_hz": 120},
        "plugins": {"record": {"use": "plugin://fastsim/record"}},
    }
    return _record(run, workdir / f"numeric-{hours:g}h", 3600.0 * hours)


def camera_recording(workdir: Path, seconds: float) -> Path:
    """``fsr record``: the DROID-like MuJoCo example at 640x480, no reset."""
    run = yaml.safe_load((ROOT / "examples" / "droid-like" / "run.yaml").read_text())
    run["scenario"]["scene"]["mujoco"].update(width=640, height=480, reset_every_s=10_000.0)
    run["runtime"]["duration_s"] = seconds
    return _record(run, workdir / f"cameras-{seconds:g}s", seconds)


def write_mcap(fsr: Path, target: Path) -> int:
    """The FSR's observation ticks as MCAP messages (one per tick); returns the count."""
    from mcap.writer import CompressionType, Writer

    if target.exists():
        target.unlink()
    with fr.open(fsr) as rec:
        state = rec._file()
        spec = next(s for s in state.streams.values() if s.codec.get("payload_codec") == "numeric-tick/1")
        rows = state.tables.rows(spec.stream_id)
        rows = rows[rows["kind"] == 0]
        with target.open("wb") as stream:
            writer = Writer(stream, compression=CompressionType.NONE)
            writer.start(profile="", library="bench_read")
            channel = writer.register_channel(
                topic="/observations", message_encoding="numeric-tick/1",
                schema_id=writer.register_schema(name="numeric-tick/1", encoding="", data=b""),
            )
            step = 65536
            for a in range(0, len(rows), step):
                part = rows[a:a + step]
                raw = state.tables.gather(part["payload_at"], int(spec.codec["record_bytes"]))
                for k, t in enumerate(part["time_ns"].tolist()):
                    writer.add_message(channel, log_time=t, data=raw[k].tobytes(), publish_time=t,
                                       sequence=a + k)
            writer.finish()  # type: ignore[no-untyped-call]
    return len(rows)


def read_mcap(path: Path) -> int:
    """Every message in log-time order, keeping its bytes (no decoding)."""
    from mcap.reader import make_reader

    kept: list[bytes] = []
    with path.open("rb") as stream:
        for _schema, _channel, message in make_reader(stream).iter_messages(log_time_order=True):
            kept.append(message.data)
    return len(kept)


def read_fsr(path: Path) -> int:
    """Every channel of every tick into NumericSeries."""
    with fr.open(path) as rec:
        series = rec.numeric_all()
        return len(next(iter(series.values())))


def read_fsr_fresh(path: Path) -> float:
    """ticks/s of ``read_fsr`` after the reader let go of the memory it keeps for the next read
    (``reading/_reuse.py``): this read, like the numpy copy, writes into fresh pages.  Holding
    an earlier result instead would not do: its pages would stay taken, and on this VM a
    read into pages not recently freed pays the host for them."""
    with contextlib.suppress(ModuleNotFoundError):  # a version without it: fresh memory anyway
        importlib.import_module("fastsim_recording_format.reading._reuse").release()
    start = time.perf_counter()
    ticks = read_fsr(path)
    return ticks / (time.perf_counter() - start)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def droid_sized_recording(workdir: Path, hours: float) -> Path:
    """DROID-sized ticks (13 + 13 + 7 + 1 float64) at 120 Hz, written by the format's writer."""
    from fastsim_recording_format import FsrWriter, RecordIn, RunMetadata, StreamSpec
    from fastsim_recording_format.codecs import numeric

    # a version without column blocks (the "before" of issue 26) is given rows
    block: Any = getattr(importlib.import_module("fastsim_recording_format.writer"), "RecordBlock", None)

    target = workdir / f"droid-sized-{hours:g}h.fsr"
    if target.exists():
        return target
    size, layout = numeric.channel_entries([
        ("robot.joint_position", "float64", (13,), ("rad",), "robot"),
        ("robot.joint_velocity", "float64", (13,), ("rad/s",), "robot"),
        ("robot.base_pose", "float64", (7,), ("m",), "robot"),
        ("robot.gripper", "float64", (1,), ("1",), "robot"),
    ])
    spec = StreamSpec(1, "observations", "observations", numeric.codec_description(size), {"channels": layout})
    ticks = round(hours * 3600 * 120)
    rng = np.random.default_rng(0)
    with FsrWriter(target, RunMetadata("droid-sized", "droid-sized-c", {"name": "bench_read"}), [spec],
                   payload_crc=False) as writer:
        for start in range(0, ticks, 120):
            n = min(120, ticks - start)
            g = np.arange(start + 1, start + n + 1, dtype=np.uint64)
            t = (g.astype(np.int64) - 1) * (10**9 // 120)
            payload = rng.random((n, size // 8)).tobytes()
            if block is not None:
                writer.write_batch([block(1, 0, g, g, t, size, payload)])
            else:
                writer.write_batch([
                    RecordIn.data(1, int(g[k]), int(g[k]), 0, int(t[k]), payload[k * size:(k + 1) * size])
                    for k in range(n)
                ])
        writer.seal()
    return target


# -- frames -----------------------------------------------------------------------------
def encode_av1(rec: fr.Recording, camera: str, target: Path, fps: int) -> None:
    """A camera's frames as LeRobot stores video: libsvtav1, crf 30, g 2, yuv420p."""
    import av

    if target.exists():
        return
    with av.open(str(target), "w") as out:
        stream = out.add_stream("libsvtav1", rate=fps, options={"g": "2", "crf": "30", "preset": "12"})
        first = rec.frame(camera, 0).image
        stream.width, stream.height = first.shape[1], first.shape[0]
        stream.pix_fmt = "yuv420p"
        for frame in rec.frames(camera):
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame.image, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


class Av1Camera:
    """One open mp4 and the pts of each frame index."""

    def __init__(self, path: Path) -> None:
        import av

        self.path = path
        self.container = av.open(str(path))
        self.stream = self.container.streams.video[0]
        self.pts: list[int] = [int(f.pts or 0) for f in self.container.decode(self.stream)]

    def frame(self, index: int) -> Any:
        target = self.pts[index]
        self.container.seek(target, stream=self.stream, backward=True, any_frame=False)
        for frame in self.container.decode(self.stream):
            if frame.pts is not None and frame.pts >= target:
                return frame.to_ndarray(format="rgb24")
        raise LookupError(index)

    def frame_reopened(self, index: int) -> Any:
        """As LeRobot's ``decode_video_frames``: open the file for each query, seek, decode."""
        import av

        target = self.pts[index]
        with av.open(str(self.path)) as container:
            stream = container.streams.video[0]
            container.seek(target, stream=stream, backward=True, any_frame=False)
            for frame in container.decode(stream):
                if frame.pts is not None and frame.pts >= target:
                    return frame.to_ndarray(format="rgb24")
        raise LookupError(index)

    def all_frames(self) -> int:
        self.container.seek(0, stream=self.stream, backward=True, any_frame=False)
        n = 0
        for frame in self.container.decode(self.stream):
            frame.to_ndarray(format="rgb24")
            n += 1
        return n
