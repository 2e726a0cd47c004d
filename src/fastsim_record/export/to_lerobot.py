"""LeRobot dataset v3.0, written with pyarrow and PyAV (extra ``lerobot``; no torch).

Many FSR files become one dataset; every Runtime generation of every file is one
episode (a reset starts a new episode), in the order the sources are given.

Rules:

    | # | rule                                                                           |
    |---|--------------------------------------------------------------------------------|
    | 1 | ``fps`` is the camera tick rate, ``(n - 1) / (t_last - t_first)`` over an        |
    |   | episode's frames; it must be an integer (within 1e-3) and the same for every    |
    |   | camera and episode, and every camera of an episode must have the same frame     |
    |   | times; otherwise the export is refused with one line                            |
    | 2 | frame ``i`` of an episode is the ``i``-th frame of every camera; its            |
    |   | ``timestamp`` is exactly ``i / fps`` (episode-relative); video pts are the       |
    |   | dataset-wide frame counter with time base ``1/fps``, so ``from_timestamp +       |
    |   | timestamp`` is a frame's exact presentation time                                |
    | 3 | a numeric value at a frame is the latest sample at or before the frame's time   |
    |   | in the same generation (zero-order hold); before the first sample, the first    |
    | 4 | ``observation.state`` = joint position then joint velocity (float64, with the   |
    |   | channels' element names); ``action`` = the applied control targets (``ctrl`` of |
    |   | ``control.result``, actuator names), sampled by rule 3                          |
    | 5 | ``observation.cameras.<alias>.intrinsics`` [9] = K row-major; ``.extrinsics``    |
    |   | [7] = camera-to-world translation and quaternion xyzw (OpenCV optical frame)    |
    | 6 | ``task`` = ``--task``, else the Run's name                                      |

Video: AV1 with LeRobot's defaults (libsvtav1, yuv420p, g 2, crf 30, preset 12), or
H.264 (libx264, yuv420p, g 2, crf 23).  One mp4 per camera, one data parquet (one row
group per episode) and one episodes parquet: all in chunk 000, file 000.  Frames are
decoded, encoded and dropped one at a time; numeric values are held one episode at a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fastsim_record.export._port import (
    ExportError,
    ExportOptions,
    ExportSummary,
    MissingExtra,
    Progress,
)
from fastsim_record.export._source import actions, sample_at, state_channels
from fastsim_record.export._stats import RunningStats
from fastsim_record.reading import Episode, Recording
from fastsim_record.reading import open as open_recording

__all__ = ["LeRobotExporter", "VIDEO_CODECS"]

DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-000/file-000.parquet"
#: --video-codec -> (PyAV encoder, info.json codec name, encoder options)
VIDEO_CODECS: dict[str, tuple[str, str, dict[str, str]]] = {
    "av1": ("libsvtav1", "av1", {"g": "2", "crf": "30", "preset": "12"}),
    "h264": ("libx264", "h264", {"g": "2", "crf": "23"}),
}
EXTRINSIC_NAMES = ["x", "y", "z", "qx", "qy", "qz", "qw"]


def _libs() -> tuple[Any, Any, Any]:
    os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints its banner on stderr otherwise: errors only
    try:
        import av
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise MissingExtra("lerobot", "lerobot", exc.name or "pyarrow and av") from None
    return pa, pq, av


class _Plan:
    """What the sources hold, checked against the rules before anything is written."""

    def __init__(self, recs: list[Recording], options: ExportOptions) -> None:
        self.episodes: list[tuple[Recording, Episode, str]] = []
        first = recs[0]
        self.cameras = first.cameras()
        self.position, self.velocity = state_channels(first)
        self.fps: int | None = None
        self.sizes: dict[str, tuple[int, int]] = {}
        self.state_names: list[str] = []
        self.action_names: list[str] = []
        for rec in recs:
            if rec.cameras() != self.cameras:
                raise ExportError(f"{rec.path}: cameras {list(rec.cameras())} differ from {list(self.cameras)} "
                                  f"of {first.path}")
            if not self.cameras:
                raise ExportError(f"{rec.path}: no camera; a LeRobot dataset's fps is the camera tick rate")
            if state_channels(rec) != (self.position, self.velocity):
                raise ExportError(f"{rec.path}: joint channels {state_channels(rec)} differ from "
                                  f"{(self.position, self.velocity)} of {first.path}")
            task = options.task or rec.info.name or Path(rec.path).stem
            for ep in rec.episodes():
                self._check_rate(rec, ep)
                names = actions(ep)[2]
                if not self.action_names:
                    self.action_names = list(names)
                elif names and list(names) != self.action_names:
                    raise ExportError(f"{rec.path}: generation {ep.generation}: actuators {list(names)} differ "
                                      f"from {self.action_names}")
                self.episodes.append((rec, ep, task))
        for cam in self.cameras:
            frame = first.frame(cam, 0).image
            self.sizes[cam] = (int(frame.shape[0]), int(frame.shape[1]))
        pos = first.numeric(self.position)
        self.state_names = list(pos.names)
        if self.velocity is not None:
            self.state_names += list(first.numeric(self.velocity).names)
        self.tasks = list(dict.fromkeys(t for _, _, t in self.episodes))

    def _check_rate(self, rec: Recording, ep: Episode) -> None:
        times = None
        for cam in self.cameras:
            t = ep.calibration(cam).time_ns
            if times is None:
                times = t
            elif len(t) != len(times) or bool((t != times).any()):
                raise ExportError(
                    f"{rec.path}: generation {ep.generation}: camera {cam!r} has {len(t)} frames at other "
                    f"times than camera {self.cameras[0]!r} ({len(times)}); LeRobot needs one frame "
                    "time for all cameras"
                )
            if len(t) != ep.frame_count(cam):
                raise ExportError(f"{rec.path}: camera {cam!r} has {ep.frame_count(cam)} frames but "
                                  f"{len(t)} calibration samples in generation {ep.generation}")
        if times is None or len(times) < 2:
            return
        rate = (len(times) - 1) * 1e9 / float(times[-1] - times[0])
        fps = round(rate)
        if fps < 1 or abs(rate - fps) > 1e-3:
            raise ExportError(f"{rec.path}: generation {ep.generation}: camera rate {rate:.6f} Hz is not an "
                              "integer; LeRobot's fps must be one")
        if self.fps is None:
            self.fps = fps
        elif fps != self.fps:
            raise ExportError(f"{rec.path}: generation {ep.generation}: camera rate {fps} Hz differs from "
                              f"{self.fps} Hz of the first episode")


class LeRobotExporter:
    """All sources into one LeRobot v3.0 dataset folder."""

    name = "lerobot"
    extra = "lerobot"

    def export(
        self, sources: Sequence[Path], out: Path, options: ExportOptions, progress: Progress
    ) -> ExportSummary:
        """Write the dataset folder ``out``."""
        pa, pq, av = _libs()
        if options.video_codec not in VIDEO_CODECS:
            raise ExportError(f"video codec {options.video_codec!r} is not one of {sorted(VIDEO_CODECS)}")
        recs = [open_recording(p) for p in sources]
        plan = _Plan(recs, options)
        fps = plan.fps or 1
        progress.total(sum(ep.frame_count(plan.cameras[0]) for _, ep, _ in plan.episodes))
        out.mkdir()
        (out / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
        (out / "data" / "chunk-000").mkdir(parents=True)
        encoder, codec_name, codec_options = VIDEO_CODECS[options.video_codec]
        videos: dict[str, Any] = {}
        streams: dict[str, Any] = {}
        for cam in plan.cameras:
            path = out / VIDEO_PATH.format(video_key=f"observation.images.{cam}", chunk_index=0, file_index=0)
            path.parent.mkdir(parents=True)
            container = av.open(str(path), "w", options={"movflags": "faststart"})
            stream = container.add_stream(encoder, rate=fps, options=dict(codec_options))
            stream.height, stream.width = plan.sizes[cam]
            stream.pix_fmt = "yuv420p"
            stream.time_base = _fraction(fps)
            videos[cam], streams[cam] = container, stream
        features = _features(plan, fps, codec_name, codec_options)
        schema = _schema(pa, plan)
        stats = {key: RunningStats() for key in features if features[key]["dtype"] != "video"}
        image_stats = {cam: RunningStats() for cam in plan.cameras}
        rows_meta: list[dict[str, Any]] = []
        index = 0
        data_path = out / DATA_PATH.format(chunk_index=0, file_index=0)
        with pq.ParquetWriter(str(data_path), schema) as writer:
            for ep_index, (rec, ep, task) in enumerate(plan.episodes):
                columns, n = _episode_columns(plan, rec, ep, fps, ep_index, index, plan.tasks.index(task))
                from_ts = index / fps
                _encode_episode(av, plan, ep, videos, streams, index, image_stats, progress)
                writer.write_table(pa.table({k: _arrow(pa, v) for k, v in columns.items()}, schema=schema))
                for key, value in columns.items():
                    stats[key].add(np.asarray(value, np.float64).reshape(n, -1))
                row: dict[str, Any] = {
                    "episode_index": ep_index, "tasks": [task], "length": n,
                    "data/chunk_index": 0, "data/file_index": 0,
                    "dataset_from_index": index, "dataset_to_index": index + n,
                }
                for cam in plan.cameras:
                    key = f"videos/observation.images.{cam}"
                    row |= {f"{key}/chunk_index": 0, f"{key}/file_index": 0,
                            f"{key}/from_timestamp": from_ts, f"{key}/to_timestamp": (index + n) / fps}
                row |= {"meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0}
                rows_meta.append(row)
                index += n
        for cam in plan.cameras:
            for packet in streams[cam].encode(None):
                videos[cam].mux(packet)
            videos[cam].close()
        pq.write_table(pa.Table.from_pylist(rows_meta), str(out / EPISODES_PATH))
        _write_tasks(pa, pq, out / "meta" / "tasks.parquet", plan.tasks)
        all_stats = {k: s.to_json() for k, s in stats.items()}
        all_stats |= {f"observation.images.{c}": s.to_json(image=True) for c, s in image_stats.items()}
        (out / "meta" / "stats.json").write_text(json.dumps(all_stats, indent=2))
        info = {
            "codebase_version": "v3.0", "robot_type": _robot_type(recs[0]),
            "total_episodes": len(plan.episodes), "total_frames": index, "total_tasks": len(plan.tasks),
            "chunks_size": 1000, "data_files_size_in_mb": 100, "video_files_size_in_mb": 200,
            "fps": fps, "splits": {"train": f"0:{len(plan.episodes)}"},
            "data_path": DATA_PATH, "video_path": VIDEO_PATH, "features": features,
        }
        (out / "meta" / "info.json").write_text(json.dumps(info, indent=4))
        for rec in recs:
            rec.close()
        return ExportSummary(out, len(plan.episodes), {"frames": index, "videos": len(plan.cameras)})


def _fraction(fps: int) -> Any:
    from fractions import Fraction

    return Fraction(1, fps)


def _robot_type(rec: Recording) -> str | None:
    scene = rec.info.attributes.get("scene")
    authored = scene.get("authored") if isinstance(scene, dict) else None
    robots = authored.get("robots") if isinstance(authored, dict) else None
    if isinstance(robots, dict):
        for robot in robots.values():
            use = robot.get("use") if isinstance(robot, dict) else None
            if isinstance(use, str):
                return use.rstrip("/").rsplit("/", 1)[-1]
    return None


def _features(plan: _Plan, fps: int, codec: str, options: dict[str, str]) -> dict[str, Any]:
    feats: dict[str, Any] = {
        "observation.state": {"dtype": "float64", "shape": [len(plan.state_names)], "names": plan.state_names},
    }
    if plan.action_names:
        feats["action"] = {"dtype": "float64", "shape": [len(plan.action_names)], "names": plan.action_names}
    for cam in plan.cameras:
        h, w = plan.sizes[cam]
        info: dict[str, Any] = {
            "video.height": h, "video.width": w, "video.codec": codec, "video.pix_fmt": "yuv420p",
            "video.fps": fps, "video.channels": 3, "has_audio": False, "video.is_depth_map": False,
        }
        info |= {f"video.{k}": int(v) for k, v in options.items()}
        feats[f"observation.images.{cam}"] = {"dtype": "video", "shape": [h, w, 3],
                                             "names": ["height", "width", "channels"], "info": info}
    for cam in plan.cameras:
        feats[f"observation.cameras.{cam}.intrinsics"] = {
            "dtype": "float64", "shape": [9], "names": [f"k{i}{j}" for i in range(3) for j in range(3)]}
        feats[f"observation.cameras.{cam}.extrinsics"] = {"dtype": "float64", "shape": [7], "names": EXTRINSIC_NAMES}
    feats["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
    for key in ("frame_index", "episode_index", "index", "task_index"):
        feats[key] = {"dtype": "int64", "shape": [1], "names": None}
    return feats


def _schema(pa: Any, plan: _Plan) -> Any:
    fields = [pa.field("observation.state", pa.list_(pa.float64(), len(plan.state_names)))]
    if plan.action_names:
        fields.append(pa.field("action", pa.list_(pa.float64(), len(plan.action_names))))
    for cam in plan.cameras:
        fields.append(pa.field(f"observation.cameras.{cam}.intrinsics", pa.list_(pa.float64(), 9)))
        fields.append(pa.field(f"observation.cameras.{cam}.extrinsics", pa.list_(pa.float64(), 7)))
    fields.append(pa.field("timestamp", pa.float32()))
    fields += [pa.field(k, pa.int64()) for k in ("frame_index", "episode_index", "index", "task_index")]
    return pa.schema(fields)


def _episode_columns(
    plan: _Plan, rec: Recording, ep: Episode, fps: int, ep_index: int, first: int, task_index: int
) -> tuple[dict[str, Any], int]:
    cal0 = ep.calibration(plan.cameras[0])
    at = cal0.time_ns
    n = len(at)
    pos = ep.numeric(plan.position)
    if len(pos) == 0:
        raise ExportError(f"{rec.path}: generation {ep.generation}: no {plan.position} sample")
    state = [sample_at(pos.time_ns, pos.values, at).reshape(n, -1)]
    if plan.velocity is not None:
        vel = ep.numeric(plan.velocity)
        state.append(sample_at(vel.time_ns, vel.values, at).reshape(n, -1))
    cols: dict[str, Any] = {"observation.state": np.concatenate(state, axis=1)}
    if plan.action_names:
        t, targets, _ = actions(ep)
        if len(t) == 0:
            raise ExportError(f"{rec.path}: generation {ep.generation}: no applied control target for 'action'")
        cols["action"] = sample_at(t, targets, at)
    for cam in plan.cameras:
        cal = cal0 if cam == plan.cameras[0] else ep.calibration(cam)
        cols[f"observation.cameras.{cam}.intrinsics"] = cal.k.reshape(n, 9)
        cols[f"observation.cameras.{cam}.extrinsics"] = np.concatenate(
            [cal.translation, cal.quaternion_xyzw], axis=1)
    frame_index = np.arange(n, dtype=np.int64)
    cols["timestamp"] = (frame_index / fps).astype(np.float32)
    cols["frame_index"] = frame_index
    cols["episode_index"] = np.full(n, ep_index, np.int64)
    cols["index"] = frame_index + first
    cols["task_index"] = np.full(n, task_index, np.int64)
    return cols, n


def _arrow(pa: Any, values: Any) -> Any:
    if values.ndim == 1:
        return pa.array(values)
    flat = np.ascontiguousarray(values, np.float64)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), flat.shape[1])


def _encode_episode(
    av: Any, plan: _Plan, ep: Episode, videos: dict[str, Any], streams: dict[str, Any], first: int,
    image_stats: dict[str, RunningStats], progress: Progress,
) -> None:
    iters = [ep.frames(cam) for cam in plan.cameras]
    for k, frames in enumerate(zip(*iters)):
        for cam, frame in zip(plan.cameras, frames):
            vf = av.VideoFrame.from_ndarray(frame.image, format="rgb24")
            vf.pts = first + k
            for packet in streams[cam].encode(vf):
                videos[cam].mux(packet)
            if k % 5 == 0:  # image statistics from every 5th frame, every 4th pixel
                image_stats[cam].add(frame.image[::4, ::4].reshape(-1, 3) / 255.0)
        progress.advance(1)


def _write_tasks(pa: Any, pq: Any, path: Path, tasks: list[str]) -> None:
    """``meta/tasks.parquet`` as pandas writes it: index ``task``, column ``task_index``."""
    table = pa.table({"task_index": pa.array(range(len(tasks)), pa.int64()), "task": pa.array(tasks, pa.string())})
    pandas_meta = {
        "index_columns": ["task"], "column_indexes": [{"name": None, "field_name": None,
                                                        "pandas_type": "unicode", "numpy_type": "object",
                                                        "metadata": {"encoding": "UTF-8"}}],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
             "numpy_type": "int64", "metadata": None},
            {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object",
             "metadata": None},
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__}, "pandas_version": "2.2.3",
    }
    table = table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})
    pq.write_table(table, str(path))
