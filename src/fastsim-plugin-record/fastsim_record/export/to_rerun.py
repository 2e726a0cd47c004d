"""Rerun ``.rrd`` recordings, written with rerun-sdk (extra ``rerun``); no viewer is started.

Entities (the recording id is the Run id, the application id ``fsr``):

    | entity                              | archetypes                     | from                        |
    |-------------------------------------|--------------------------------|-----------------------------|
    | ``world``                           | ``ViewCoordinates`` RIGHT_HAND_Z_UP (static)                 |
    | ``world/cameras/<alias>``           | ``Transform3D`` (parent from   | ``.extrinsics``, per sample |
    |                                     | child), ``Pinhole`` (K, size,  | ``.intrinsics``, per sample |
    |                                     | camera_xyz RDF)                |                             |
    | ``world/cameras/<alias>/image``     | ``EncodedImage``               | ``.rgb`` bytes as recorded  |
    |                                     |                                | (a grey or RGBA camera's    |
    |                                     |                                | PNG too: L8 / RGBA8, alpha  |
    |                                     |                                | kept)                       |
    | ``numeric/<channel>``               | ``Scalars`` (``SeriesLines``   | numeric channel             |
    |                                     | names, static)                 |                             |
    | ``events``, ``lifecycle``, ``control`` | ``TextLog``                 | the JSON streams            |
    | ``command/<target>.<command>``      | ``Scalars`` (names, static)    | an issued command's vector  |
    |                                     |                                | (``_commands``), beside the |
    |                                     |                                | joint states                |
    | ``world/bodies/<body>``             | ``Transform3D`` over time      | geometry transforms         |
    | ``world/bodies/<body>/<item>``      | ``Mesh3D`` / ``Boxes3D`` (static) | geometry assets          |

Timelines: ``sim_time`` (simulation time plus the generation offset of
:func:`fastsim_record.export._source.generation_offsets`) and ``tick`` (the index of the
latest numeric tick at or before that time; the sample index when there is no numeric
stream).  Columns are sent with ``send_columns`` in blocks (64 images, 1024 other rows), read
one record at a time (``_stream``), so memory does not grow with the episode.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import select
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fastsim_record.export._commands import command_series
from fastsim_record.export._port import Progress, load_extra
from fastsim_record.export._source import PerSourceExporter, generation_offsets
from fastsim_record.export._stream import (
    CalibrationRecord,
    Channel,
    FrameRecord,
    JsonRecord,
    TickRecord,
    check_calibrated,
    export_records,
    numeric_channels,
    png_bytes,
)
from fastsim_recording_format import FsrReader, RecordKind, names
from fastsim_recording_format.codecs.geometry import decode_assets, decode_transforms, record_kind
from fastsim_recording_format.reading import Recording
from fastsim_recording_format.reading.decoded import GeometryRecord

__all__ = ["RerunExporter"]

BLOCK = 64
Array = npt.NDArray[Any]
_MEDIA = {"jpeg": "image/jpeg", "png": "image/png"}


def _rr() -> Any:
    return load_extra("rerun", "rerun", "rerun", package="rerun-sdk")[0]



class _Clock:
    """``sim_time`` and ``tick`` of record times of one recording."""

    def __init__(self, rec: Recording, channels: dict[str, Channel]) -> None:
        self.offsets = generation_offsets(rec)
        self.ticks: Array | None = None
        if channels:
            first = next(iter(channels.values()))
            with FsrReader(rec.path) as reader:  # the tick times only: 8 bytes a tick
                rows = [(r.sim_time_ns, r.generation) for r in reader.records(first.stream)
                        if r.kind is RecordKind.DATA]
            if rows:
                arr = np.array(rows, np.int64).reshape(-1, 2)
                self.ticks = np.sort(self.sim(arr[:, 0], arr[:, 1]))

    def sim(self, time_ns: Array, generation: Array) -> Array:
        """Simulation time plus the generation offsets, int64 ns."""
        off = np.array([self.offsets[int(g)] for g in np.asarray(generation).tolist()], np.int64)
        out: Array = np.asarray(time_ns, np.int64) + off
        return out

    def indexes(self, rr: Any, sim: Array, fallback_first: int = 0) -> list[Any]:
        """The two time columns of rows at ``sim``."""
        if self.ticks is not None:
            tick = np.maximum(np.searchsorted(self.ticks, sim, side="right") - 1, 0)
        else:
            tick = np.arange(fallback_first, fallback_first + len(sim))
        return [rr.TimeColumn("sim_time", duration=np.asarray(sim, "timedelta64[ns]")),
                rr.TimeColumn("tick", sequence=tick.astype(np.int64))]


def write_rrd(rec: Recording, path: Path, progress: Progress) -> dict[str, int]:
    """Write one recording as one ``.rrd`` in one pass in recording order; returns rows per entity."""
    rr = _rr()
    info = rec.info
    stream = rr.RecordingStream("fsr", recording_id=info.run_id, send_properties=True)
    with tempfile.TemporaryDirectory(prefix="fsr-rerun-") as tmp, _Pump(Path(tmp), path) as pump:
        try:  # save inside: a stop signal right after it still disconnects the sink below
            stream.save(str(pump.fifo))
            return _write_all(rr, rec, stream, pump, progress)
        finally:
            stream.disconnect()  # the sink's last bytes reach the pump, which drains even after an error


class _Pump:
    """Rerun's file sink writes into a FIFO; a thread copies it to ``path``.

    A write error (a full disk: ENOSPC) is kept and raised by ``check()`` at the exporter's
    next progress step, while the thread goes on draining the FIFO until the SDK closes it.
    Rerun's own sink, writing to a full disk itself, could block its interpreter for good
    when the stream was dropped; the native side here never waits on a disk.

    When the export fails or is interrupted (a stop signal between ``save`` and
    ``disconnect``), the output is thrown away: the thread drains for at most
    ``GRACE_S`` more and then stops, so a sink the SDK never closed cannot hold the
    exporter in ``join`` for good.
    """

    GRACE_S = 2.0

    def __init__(self, tmp: Path, path: Path) -> None:
        self.fifo = tmp / "sink.rrd"
        os.mkfifo(self.fifo)
        self._path = path
        self._error: OSError | None = None
        self._abandoned = threading.Event()  # the export failed: its output is thrown away
        self._thread = threading.Thread(target=self._run, name="fsr-rerun-pump", daemon=True)

    def __enter__(self) -> _Pump:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self._abandoned.set()
        # a reader still waiting for a writer (the SDK never opened the FIFO) sees EOF; with no
        # reader left (ENXIO) the thread has finished or is finishing
        with contextlib.suppress(OSError):
            os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
        self._thread.join()
        if exc[0] is None:
            self.check()

    def _run(self) -> None:
        # 1 MiB: the output is written a MiB at a time and the FIFO holds a MiB (fewer wake-ups)
        with self._path.open("wb", buffering=1 << 20) as out, self.fifo.open("rb", buffering=0) as src:
            with contextlib.suppress(OSError, AttributeError):  # Linux only; the default 64 KiB else
                fcntl.fcntl(src.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
            deadline = None
            while True:
                if deadline is None and self._abandoned.is_set():
                    deadline = time.monotonic() + self.GRACE_S
                if deadline is not None and time.monotonic() > deadline:
                    return  # abandoned, and the SDK still holds the FIFO: stop waiting for its EOF
                if not select.select([src], [], [], 0.1)[0]:
                    continue
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                if self._error is None:
                    try:
                        out.write(chunk)
                    except OSError as exc:
                        self._error = exc
            if self._error is None:
                try:
                    out.flush()
                except OSError as exc:
                    self._error = exc

    def check(self) -> None:
        if self._error is not None:
            raise self._error


def _write_all(rr: Any, rec: Recording, stream: Any, pump: _Pump, progress: Progress) -> dict[str, int]:
    info = rec.info
    with FsrReader(rec.path) as reader:
        channels = numeric_channels(reader)
        sizes = {of[0]: (int(s.codec.get("width", 0)), int(s.codec.get("height", 0)))
                 for s in reader.streams if (of := names.camera_of(s.name)) and of[1] == names.RGB}
    clock = _Clock(rec, channels)
    out = _Entities(rr, stream, clock)
    stream.log("world", rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)
    stream.log("fsr", rr.TextDocument(json.dumps({
        "run_id": info.run_id, "name": info.name, "backend": info.backend, "seed": info.seed,
        "completion": info.completion, "generations": list(info.generations),
        "generation_offsets_ns": clock.offsets,
    }, indent=2), media_type="text/markdown"), static=True)
    for cam in sizes:
        stream.log(f"world/cameras/{cam}", rr.Pinhole.from_fields(camera_xyz=rr.ViewCoordinates.RDF), static=True)
    for ch in channels.values():
        stream.log(f"numeric/{ch.name}", rr.SeriesLines(names=list(ch.names)), static=True)
    meshes: dict[str, tuple[Array, Array]] = {}
    attributes = info.attributes  # the Run's declared controls name the command elements
    named: set[str] = set()
    done = 0
    for r in export_records(rec.path):
        t, g = r.time_ns, r.generation
        done += 3 if type(r) is CalibrationRecord else 1
        if done >= 256 or type(r) is FrameRecord:  # a frame is slow to encode: report each one
            progress.advance(done)
            done = 0
            pump.check()
        if isinstance(r, FrameRecord):
            codec = r.codec.codec
            blob = r.payload if codec in _MEDIA else png_bytes(r)
            out.add("image", f"world/cameras/{r.camera}/image", t, g, (blob, _MEDIA.get(codec, "image/png")))
        elif isinstance(r, CalibrationRecord):
            check_calibrated(rec.path, r)
            out.add("camera", f"world/cameras/{r.camera}", t, g, (r, sizes.get(r.camera, (0, 0))))
        elif isinstance(r, TickRecord):
            fill = r.fill  # a generation's last tick: its per-step channels are a fill, not written
            for name, values in r.values.items():
                if name not in fill:
                    out.add("scalars", f"numeric/{name}", t, g, values)
        elif isinstance(r, JsonRecord):
            data = r.data
            text = f"{r.stream} g{r.generation}: {json.dumps(data, sort_keys=True)}"
            out.add("text", _entity(r.stream), t, g, (text, "WARN" if data.get("accepted") is False else "INFO"))
            series = command_series(r.stream, data, attributes)
            if series is not None:
                if series.name not in named:
                    named.add(series.name)
                    stream.log(f"command/{series.name}", rr.SeriesLines(names=list(series.names)), static=True)
                out.add("scalars", f"command/{series.name}", t, g, series.values)
        elif isinstance(r, GeometryRecord):
            for body, pose in _geometry(rr, stream, r.payload, meshes).items():
                out.add("body", f"world/bodies/{body}", t, g, pose)
    out.flush_all()
    progress.advance(done)
    stream.flush()
    return out.counts


class _Entities:
    """Rows buffered per entity and sent as columns: 64 images or 1024 other rows at a time."""

    def __init__(self, rr: Any, stream: Any, clock: _Clock) -> None:
        self.rr, self.stream, self.clock = rr, stream, clock
        self.rows: dict[tuple[str, str], list[tuple[int, int, Any]]] = {}
        self.counts: dict[str, int] = {}

    def add(self, kind: str, entity: str, t: int, g: int, value: Any) -> None:
        """Buffer one row; send the entity's rows when the block is full."""
        rows = self.rows.setdefault((kind, entity), [])
        rows.append((t, g, value))
        if len(rows) >= (BLOCK if kind == "image" else 1024):
            self._flush(kind, entity, rows)

    def flush_all(self) -> None:
        """Send every buffered row."""
        for (kind, entity), rows in self.rows.items():
            if rows:
                self._flush(kind, entity, rows)

    def _flush(self, kind: str, entity: str, rows: list[tuple[int, int, Any]]) -> None:
        rr = self.rr
        first = self.counts.get(entity, 0)
        sim = self.clock.sim(np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.int64))
        values = [r[2] for r in rows]
        n = len(rows)
        if kind == "image":
            columns = rr.EncodedImage.columns(blob=[v[0] for v in values], media_type=[v[1] for v in values])
        elif kind == "camera":
            cals = [v[0] for v in values]
            self.stream.send_columns(entity, indexes=self.clock.indexes(rr, sim, first), columns=rr.Pinhole.columns(
                image_from_camera=np.stack([c.k for c in cals]), resolution=np.tile(values[0][1], (n, 1))))
            columns = rr.Transform3D.columns(
                translation=np.stack([c.translation for c in cals]),
                quaternion=np.stack([c.quaternion_xyzw for c in cals]),
                relation=[rr.TransformRelation.ParentFromChild] * n)
        elif kind == "scalars":
            columns = rr.Scalars.columns(scalars=np.stack(values))
        elif kind == "text":
            columns = rr.TextLog.columns(text=[v[0] for v in values], level=[v[1] for v in values])
        else:
            poses = np.stack(values)
            columns = rr.Transform3D.columns(translation=poses[:, :3], quaternion=poses[:, 3:],
                                             relation=[rr.TransformRelation.ParentFromChild] * n)
        self.stream.send_columns(entity, indexes=self.clock.indexes(rr, sim, first), columns=columns)
        self.counts[entity] = first + n
        rows.clear()


def _entity(stream: str) -> str:
    return "control" if stream.startswith("control") else stream


def _geometry(rr: Any, stream: Any, payload: bytes, meshes: dict[str, tuple[Array, Array]]) -> dict[str, Array]:
    """Log an assets record's items (static); return the body poses of either record kind."""
    if record_kind(payload) != "assets":
        return decode_transforms(payload)
    assets = decode_assets(payload)
    for rid in assets.blobs:
        meshes[rid] = assets.mesh(rid)
    for item in assets.manifest.get("items", []):
        _static_item(rr, stream, item, meshes)
    return {str(b["name"]): np.asarray(b["pose"], np.float64) for b in assets.manifest.get("bodies", [])
            if isinstance(b.get("pose"), list) and len(b["pose"]) == 7}


def _static_item(rr: Any, stream: Any, item: dict[str, Any], meshes: dict[str, tuple[Array, Array]]) -> None:
    entity = f"world/bodies/{item.get('body')}/{item.get('name')}"
    lp = [float(x) for x in (item.get("local_pose") or [0, 0, 0, 0, 0, 0, 1])]
    size = [float(x) for x in (item.get("size") or [])]
    shape = item.get("shape")
    stream.log(entity, rr.Transform3D(translation=lp[:3], quaternion=lp[3:]), static=True)
    if item.get("resource") in meshes:
        v, f = meshes[item["resource"]]
        stream.log(entity, rr.Mesh3D(vertex_positions=v, triangle_indices=f), static=True)
    elif shape == "box" and len(size) >= 3:
        stream.log(entity, rr.Boxes3D(half_sizes=[size[:3]]), static=True)
    elif shape == "plane" and len(size) >= 2:
        stream.log(entity, rr.Boxes3D(half_sizes=[[size[0], size[1], 0.0005]]), static=True)
    elif shape == "sphere" and size:
        stream.log(entity, rr.Ellipsoids3D(half_sizes=[[size[0]] * 3]), static=True)


#: One ``.rrd`` per source; several sources make ``out`` a folder of them.
RerunExporter = functools.partial(PerSourceExporter, "rerun", "rerun", ".rrd", write_rrd, _rr)
