"""LeRobot dataset v3.0, written with pyarrow and PyAV (extra ``lerobot``; no torch).

Many FSR files become one dataset; every Runtime generation of every file is one
episode (a reset starts a new episode), in the order the sources are given.

Rules:

    | # | rule                                                                           |
    |---|--------------------------------------------------------------------------------|
    | 1 | ``fps`` is the camera tick rate, ``(n - 1) / (t_last - t_first)`` over an        |
    |   | episode's frames; it must be an integer (within 1e-3) and the same for every    |
    |   | camera and episode, and every camera of an episode must have the same frame     |
    |   | times; otherwise the export is refused with one line.  A recording without      |
    |   | camera (numeric only) has no video: its frames are the ticks of its state's     |
    |   | stream, and ``fps`` their rate                                                  |
    | 2 | frame ``i`` of an episode is the ``i``-th frame of every camera; its            |
    |   | ``timestamp`` is exactly ``i / fps`` (episode-relative); video pts are the       |
    |   | dataset-wide frame counter with time base ``1/fps``, so ``from_timestamp +       |
    |   | timestamp`` is a frame's exact presentation time                                |
    | 3 | a numeric value at a frame is the latest sample at or before the frame's time   |
    |   | in the same generation (zero-order hold); before the first sample, the first    |
    | 4 | ``observation.state`` = joint position then joint velocity (float32, ``names``  |
    |   | per element: the channels' element names, as LeRobot's own datasets have); a    |
    |   | Gymnasium recording without joints: its numeric ``observation`` channels in      |
    |   | order (``observation.agent_pos``, ...; not uint8 arrays of 2+ dimensions); no   |
    |   | ``observation.state`` when there is none (an image-only observation); its       |
    |   | ``observation.environment_state`` leaf is the feature of that name (float32),   |
    |   | not part of the state, as LeRobot's gym envs present it;                        |
    |   | ``action`` (float32, named) = the recorded commands: ``Recording.actions()``,   |
    |   | the command chosen after each observation tick (the control audit of a scripted |
    |   | or ``FastSimRun-v0`` Run; a Gymnasium recording's ``action`` channel); a frame  |
    |   | takes the action of its tick, else (no command after that tick, or refused) the |
    |   | latest accepted one before it in the same generation; before the first, the   |
    |   | first                                                                           |
    | 5 | ``observation.cameras.<alias>.intrinsics`` [9] = K row-major; ``.extrinsics``    |
    |   | [7] = camera-to-world translation and quaternion xyzw (OpenCV optical frame);   |
    |   | an uncalibrated camera (all NaN) has neither: its frames only                   |
    | 6 | ``task`` = ``--task``, else the Run's name                                      |
    | 7 | a grey camera (1 channel, docs/fsr-format.md 9.2) is exported with its grey     |
    |   | value in R, G and B (a LeRobot video is 3-channel); an RGBA camera without its  |
    |   | alpha channel (a yuv420p video has none): its R, G and B as recorded, alpha     |
    |   | dropped                                                                         |

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

from fastsim_record.export._lerobot_rows import Plan, frame_rows
from fastsim_record.export._port import (
    ExportError,
    ExportOptions,
    ExportSummary,
    Progress,
    load_extra,
)
from fastsim_record.export._stats import RunningStats
from fastsim_recording_format.reading import Recording
from fastsim_recording_format.reading import open as open_recording

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
    av, pa, pq = load_extra("lerobot", "lerobot", "av", "pyarrow", "pyarrow.parquet")
    return pa, pq, av


ROWS_PER_WRITE = 1024  # frames buffered before a parquet row group is written


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
        plan = Plan(recs, options)
        fps = plan.fps or 1
        progress.total(plan.total_frames)
        out.mkdir()
        (out / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
        (out / "data" / "chunk-000").mkdir(parents=True)
        codec = VIDEO_CODECS[options.video_codec]
        videos = {cam: _Video(av, out, cam, fps, plan.sizes[cam], codec) for cam in plan.cameras}
        features = _features(plan, fps, codec[1], codec[2])
        schema = _schema(pa, plan)
        stats = {key: RunningStats() for key in features if features[key]["dtype"] != "video"}
        image_stats = {cam: RunningStats() for cam in plan.cameras}
        episodes: list[dict[str, Any]] = []
        index = 0
        with pq.ParquetWriter(str(out / DATA_PATH.format(chunk_index=0, file_index=0)), schema) as writer:
            buffer = _Rows(pa, writer, schema, stats)
            for src in plan.sources:
                task_index = plan.tasks.index(src.task)
                generation: int | None = None
                k = 0
                for row in frame_rows(plan, src.path):
                    if row.generation != generation:
                        if generation is not None:
                            episodes.append(_episode_row(plan, len(episodes), src.task, index - k, k, fps))
                        buffer.flush()
                        generation, k = row.generation, 0
                    for cam in plan.cameras:
                        image = _rgb(row.images[cam])
                        videos[cam].add(image, index)
                        if index % 5 == 0:  # image statistics: every 5th frame, every 4th pixel
                            image_stats[cam].add(image[::4, ::4].reshape(-1, 3) / 255.0)
                    buffer.add(row.values, k, fps, len(episodes), index, task_index)
                    k += 1
                    index += 1
                    progress.advance(1)
                if generation is not None:
                    episodes.append(_episode_row(plan, len(episodes), src.task, index - k, k, fps))
                buffer.flush()
        for video in videos.values():
            video.close()
        pq.write_table(pa.Table.from_pylist(episodes), str(out / EPISODES_PATH))
        _write_tasks(pa, pq, out / "meta" / "tasks.parquet", plan.tasks)
        all_stats = {k: s.to_json() for k, s in stats.items()}
        all_stats |= {f"observation.images.{c}": s.to_json(image=True) for c, s in image_stats.items()}
        (out / "meta" / "stats.json").write_text(json.dumps(all_stats, indent=2))
        info = {
            "codebase_version": "v3.0", "robot_type": _robot_type(recs[0]),
            "total_episodes": len(episodes), "total_frames": index, "total_tasks": len(plan.tasks),
            "chunks_size": 1000, "data_files_size_in_mb": 100, "video_files_size_in_mb": 200,
            "fps": fps, "splits": {"train": f"0:{len(episodes)}"},
            "data_path": DATA_PATH, "video_path": VIDEO_PATH, "features": features,
        }
        (out / "meta" / "info.json").write_text(json.dumps(info, indent=4))
        for rec in recs:
            rec.close()
        return ExportSummary(out, len(episodes), {"frames": index})


def _rgb(image: Any) -> Any:
    """Rule 7: a grey frame with its value in R, G and B; an RGBA frame without its alpha."""
    channels = image.shape[2]
    if channels == 1:
        return np.repeat(image, 3, axis=2)
    if channels == 4:
        return np.ascontiguousarray(image[:, :, :3])
    return image


class _Video:
    """One camera's mp4: frames encoded as they come, pts = the dataset-wide frame index."""

    def __init__(self, av: Any, out: Path, cam: str, fps: int, size: tuple[int, int],
                 codec: tuple[str, str, dict[str, str]]) -> None:
        self.av = av
        path = out / VIDEO_PATH.format(video_key=f"observation.images.{cam}", chunk_index=0, file_index=0)
        path.parent.mkdir(parents=True)
        self.container = av.open(str(path), "w", options={"movflags": "faststart"})
        self.stream = self.container.add_stream(codec[0], rate=fps, options=dict(codec[2]))
        self.stream.height, self.stream.width = size
        self.stream.pix_fmt = "yuv420p"
        self.stream.time_base = _fraction(fps)

    def add(self, image: Any, pts: int) -> None:
        """Encode one RGB frame at ``pts``."""
        frame = self.av.VideoFrame.from_ndarray(image, format="rgb24")
        frame.pts = pts
        for packet in self.stream.encode(frame):
            self.container.mux(packet)

    def close(self) -> None:
        """Flush the encoder and close the file."""
        for packet in self.stream.encode(None):
            self.container.mux(packet)
        self.container.close()


class _Rows:
    """Frame rows buffered and written as parquet row groups (never a whole episode at once)."""

    def __init__(self, pa: Any, writer: Any, schema: Any, stats: dict[str, RunningStats]) -> None:
        self.pa, self.writer, self.schema, self.stats = pa, writer, schema, stats
        self.rows: dict[str, list[Any]] = {name: [] for name in schema.names}

    def add(self, values: dict[str, Any], k: int, fps: int, episode: int, index: int, task: int) -> None:
        """One frame: its sampled values and its indexes (``timestamp = k / fps``)."""
        for key, v in values.items():
            self.rows[key].append(v)
        self.rows["timestamp"].append(np.float32(k / fps))
        self.rows["frame_index"].append(k)
        self.rows["episode_index"].append(episode)
        self.rows["index"].append(index)
        self.rows["task_index"].append(task)
        if len(self.rows["index"]) >= ROWS_PER_WRITE:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one row group."""
        n = len(self.rows["index"])
        if not n:
            return
        columns = {}
        for name in self.schema.names:
            arr = np.asarray(self.rows[name])
            self.stats[name].add(arr.astype(np.float64).reshape(n, -1))
            columns[name] = _arrow(self.pa, arr.astype(np.float32) if name == "timestamp" else arr)
            self.rows[name] = []
        self.writer.write_table(self.pa.table(columns, schema=self.schema))


def _episode_row(plan: Plan, ep_index: int, task: str, first: int, n: int, fps: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "episode_index": ep_index, "tasks": [task], "length": n,
        "data/chunk_index": 0, "data/file_index": 0,
        "dataset_from_index": first, "dataset_to_index": first + n,
    }
    for cam in plan.cameras:
        key = f"videos/observation.images.{cam}"
        row |= {f"{key}/chunk_index": 0, f"{key}/file_index": 0,
                f"{key}/from_timestamp": first / fps, f"{key}/to_timestamp": (first + n) / fps}
    return row | {"meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0}


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


def _features(plan: Plan, fps: int, codec: str, options: dict[str, str]) -> dict[str, Any]:
    feats: dict[str, Any] = {}
    for key, names in plan.names.items():  # none: an image-only observation
        feats[key] = {"dtype": "float32", "shape": [len(names)], "names": names}
    if plan.action_names:
        feats["action"] = {"dtype": "float32", "shape": [len(plan.action_names)], "names": plan.action_names}
    for cam in plan.cameras:
        h, w = plan.sizes[cam]
        info: dict[str, Any] = {
            "video.height": h, "video.width": w, "video.codec": codec, "video.pix_fmt": "yuv420p",
            "video.fps": fps, "video.channels": 3, "has_audio": False, "is_depth_map": False,
        }
        info |= {f"video.{k}": int(v) for k, v in options.items()}
        feats[f"observation.images.{cam}"] = {"dtype": "video", "shape": [h, w, 3],
                                             "names": ["height", "width", "channels"], "info": info}
    for cam in plan.calibrated:
        feats[f"observation.cameras.{cam}.intrinsics"] = {
            "dtype": "float64", "shape": [9], "names": [f"k{i}{j}" for i in range(3) for j in range(3)]}
        feats[f"observation.cameras.{cam}.extrinsics"] = {"dtype": "float64", "shape": [7], "names": EXTRINSIC_NAMES}
    feats["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
    for key in ("frame_index", "episode_index", "index", "task_index"):
        feats[key] = {"dtype": "int64", "shape": [1], "names": None}
    return feats


def _vector(pa: Any, kind: Any, n: int) -> Any:
    """LeRobot's column type for a feature of shape ``[n]``: a scalar when n is 1 (as
    ``get_hf_features_from_features`` maps shape ``(1,)`` to ``Value``), else a fixed-size list."""
    return kind if n == 1 else pa.list_(kind, n)


def _schema(pa: Any, plan: Plan) -> Any:
    fields = [pa.field(key, _vector(pa, pa.float32(), len(names))) for key, names in plan.names.items()]
    if plan.action_names:
        fields.append(pa.field("action", _vector(pa, pa.float32(), len(plan.action_names))))
    for cam in plan.calibrated:
        fields.append(pa.field(f"observation.cameras.{cam}.intrinsics", pa.list_(pa.float64(), 9)))
        fields.append(pa.field(f"observation.cameras.{cam}.extrinsics", pa.list_(pa.float64(), 7)))
    fields.append(pa.field("timestamp", pa.float32()))
    fields += [pa.field(k, pa.int64()) for k in ("frame_index", "episode_index", "index", "task_index")]
    return pa.schema(fields)


def _arrow(pa: Any, values: Any) -> Any:
    if values.ndim == 1 or values.shape[1] == 1:  # one element per frame: a scalar column (``_vector``)
        return pa.array(values.reshape(-1))
    flat = np.ascontiguousarray(values)  # float32 state and action, float64 calibration
    return pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), flat.shape[1])


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
