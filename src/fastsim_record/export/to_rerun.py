"""Rerun ``.rrd`` recordings, written with rerun-sdk (extra ``rerun``); no viewer is started.

Entities (the recording id is the Run id, the application id ``fsr``):

    | entity                              | archetypes                     | from                        |
    |-------------------------------------|--------------------------------|-----------------------------|
    | ``world``                           | ``ViewCoordinates`` RIGHT_HAND_Z_UP (static)                 |
    | ``world/cameras/<alias>``           | ``Transform3D`` (parent from   | ``.extrinsics``, per sample |
    |                                     | child), ``Pinhole`` (K, size,  | ``.intrinsics``, per sample |
    |                                     | camera_xyz RDF)                |                             |
    | ``world/cameras/<alias>/image``     | ``EncodedImage``               | ``.rgb`` bytes as recorded  |
    | ``numeric/<channel>``               | ``Scalars`` (``SeriesLines``   | numeric channel             |
    |                                     | names, static)                 |                             |
    | ``events``, ``lifecycle``, ``control`` | ``TextLog``                 | the JSON streams            |
    | ``world/bodies/<body>``             | ``Transform3D`` over time      | geometry transforms         |
    | ``world/bodies/<body>/<item>``      | ``Mesh3D`` / ``Boxes3D`` (static) | geometry assets          |

Timelines: ``sim_time`` (simulation time plus the generation offset of
:func:`fastsim_record.export._source.generation_offsets`) and ``tick`` (the index of the
latest numeric tick at or before that time; the sample index when there is no numeric
stream).  Columns are sent with ``send_columns`` in blocks (64 images, 1024 other rows), read
one record at a time (``_stream``), so memory does not grow with the episode.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fastsim_record.export._port import ExportOptions, ExportSummary, MissingExtra, Progress
from fastsim_record.export._source import encoded_frames, generation_offsets, geometry_payloads
from fastsim_record.export._stream import (
    Channel,
    calibration_samples,
    json_records,
    numeric_channels,
    numeric_ticks,
)
from fastsim_record.fsr import FsrReader, RecordKind
from fastsim_record.reading import Recording
from fastsim_record.reading import open as open_recording

__all__ = ["RerunExporter"]

BLOCK = 64
Array = npt.NDArray[Any]
_MEDIA = {"jpeg": "image/jpeg", "png": "image/png"}


def _rr() -> Any:
    try:
        import rerun as rr
    except ImportError:
        raise MissingExtra("rerun", "rerun", "rerun-sdk") from None
    return rr


class RerunExporter:
    """One ``.rrd`` per source; several sources make ``out`` a folder of them."""

    name = "rerun"
    extra = "rerun"

    def export(
        self, sources: Sequence[Path], out: Path, options: ExportOptions, progress: Progress
    ) -> ExportSummary:
        """Write ``out`` (a file for one source, a folder for several)."""
        _rr()
        recs = [open_recording(p) for p in sources]
        progress.total(sum(sum(r.info.records.values()) for r in recs))
        counts: dict[str, int] = {}
        if len(recs) > 1:
            out.mkdir()
        for i, rec in enumerate(recs):
            target = out if len(recs) == 1 else out / f"{i:04d}-{Path(rec.path).stem}.rrd"
            for k, v in write_rrd(rec, target, progress).items():
                counts[k] = counts.get(k, 0) + v
            rec.close()
        return ExportSummary(out, sum(len(r.generations()) for r in recs), counts)


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
    """Write one recording as one ``.rrd``; returns rows per entity path."""
    rr = _rr()
    info = rec.info
    stream = rr.RecordingStream("fsr", recording_id=info.run_id, send_properties=True)
    stream.save(str(path))
    counts: dict[str, int] = {}
    with FsrReader(rec.path) as reader:
        channels = numeric_channels(reader)
    clock = _Clock(rec, channels)

    def send(entity: str, sim: Array, columns: Any, first: int = 0) -> None:
        stream.send_columns(entity, indexes=clock.indexes(rr, sim, first), columns=columns)
        counts[entity] = counts.get(entity, 0) + len(sim)
        progress.advance(len(sim))

    stream.log("world", rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)
    stream.log("fsr", rr.TextDocument(json.dumps({
        "run_id": info.run_id, "name": info.name, "backend": info.backend, "seed": info.seed,
        "completion": info.completion, "generations": list(info.generations),
        "generation_offsets_ns": clock.offsets,
    }, indent=2), media_type="text/markdown"), static=True)
    for cam in rec.cameras():
        _camera(rr, stream, rec, cam, clock, send)
    by_stream: dict[str, list[Channel]] = {}
    for ch in channels.values():
        by_stream.setdefault(ch.stream, []).append(ch)
        stream.log(f"numeric/{ch.name}", rr.SeriesLines(names=list(ch.names)), static=True)
    for name, chs in by_stream.items():
        done = 0
        for block in _blocks(numeric_ticks(rec.path, name, chs), 1024):
            sim = clock.sim(np.array([t.time_ns for t in block]), np.array([t.generation for t in block]))
            for ch in chs:
                values = np.stack([t.values[ch.name] for t in block])
                send(f"numeric/{ch.name}", sim, rr.Scalars.columns(scalars=values), done)
            done += len(block)
    for block in _blocks(json_records(rec.path), BLOCK):
        for entity in ("lifecycle", "events", "control"):
            events = [e for e in block if _entity(e.stream) == entity]
            if not events:
                continue
            sim = clock.sim(np.array([e.time_ns for e in events]), np.array([e.generation for e in events]))
            texts = [f"{e.stream} g{e.generation}: {json.dumps(e.data, sort_keys=True)}" for e in events]
            level = ["WARN" if e.data.get("accepted") is False else "INFO" for e in events]
            send(entity, sim, rr.TextLog.columns(text=texts, level=level))
    _geometry(rr, stream, rec, clock, send)
    stream.flush()
    stream.disconnect()
    return counts


def _entity(stream: str) -> str:
    return "control" if stream.startswith("control") else stream


def _blocks(items: Iterator[Any], size: int = 64) -> Iterator[list[Any]]:
    block: list[Any] = []
    for item in items:
        block.append(item)
        if len(block) == size:
            yield block
            block = []
    if block:
        yield block


def _camera(rr: Any, stream: Any, rec: Recording, cam: str, clock: _Clock, send: Any) -> None:
    base = f"world/cameras/{cam}"
    with FsrReader(rec.path) as reader:
        desc = reader.stream(f"cameras.{cam}.rgb").codec
    w, h = int(desc.get("width", 0)), int(desc.get("height", 0))
    stream.log(base, rr.Pinhole.from_fields(camera_xyz=rr.ViewCoordinates.RDF), static=True)
    done = 0
    for block in _blocks(calibration_samples(rec.path, cam), 1024):
        n = len(block)
        sim = clock.sim(np.array([c.time_ns for c in block]), np.array([c.generation for c in block]))
        send(base, sim, rr.Transform3D.columns(
            translation=np.stack([c.translation for c in block]),
            quaternion=np.stack([c.quaternion_xyzw for c in block]),
            relation=[rr.TransformRelation.ParentFromChild] * n), done)
        stream.send_columns(base, indexes=clock.indexes(rr, sim, done), columns=rr.Pinhole.columns(
            image_from_camera=np.stack([c.k for c in block]), resolution=np.tile([w, h], (n, 1))))
        done += n
    image = f"{base}/image"
    done = 0
    for block in _blocks(encoded_frames(rec, cam)):
        sim = clock.sim(np.array([f.time_ns for f in block], np.int64), np.array([f.generation for f in block]))
        blobs = [f.data if f.codec in _MEDIA else _png(f.data, w, h) for f in block]
        media = [_MEDIA.get(f.codec, "image/png") for f in block]
        send(image, sim, rr.EncodedImage.columns(blob=blobs, media_type=media), done)
        done += len(block)


def _png(raw: bytes, w: int, h: int) -> bytes:
    import cv2

    rgb = np.frombuffer(raw, np.uint8).reshape(h, w, 3)
    _ok, png = cv2.imencode(".png", rgb[:, :, ::-1])
    return bytes(png.data)


def _geometry(rr: Any, stream: Any, rec: Recording, clock: _Clock, send: Any) -> None:
    from fastsim_record.adapters.geometry import decode_assets, decode_transforms, record_kind

    meshes: dict[str, tuple[Array, Array]] = {}
    pending: dict[str, list[tuple[int, Array]]] = {}

    def flush(force: bool) -> None:
        for body, rows in pending.items():
            if rows and (force or len(rows) >= BLOCK):
                sim = np.array([t for t, _ in rows], np.int64)
                poses = np.array([p for _, p in rows], np.float64)
                send(f"world/bodies/{body}", sim, rr.Transform3D.columns(
                    translation=poses[:, :3], quaternion=poses[:, 3:],
                    relation=[rr.TransformRelation.ParentFromChild] * len(rows)))
                rows.clear()

    for time_ns, gen, payload in geometry_payloads(rec):
        t = int(clock.sim(np.array([time_ns]), np.array([gen]))[0])
        if record_kind(payload) == "assets":
            assets = decode_assets(payload)
            for rid in assets.blobs:
                meshes[rid] = assets.mesh(rid)
            for body in assets.manifest.get("bodies", []):
                if isinstance(body.get("pose"), list) and len(body["pose"]) == 7:
                    pending.setdefault(str(body["name"]), []).append((t, np.asarray(body["pose"], np.float64)))
            for item in assets.manifest.get("items", []):
                _static_item(rr, stream, item, meshes)
        else:
            for body, pose in decode_transforms(payload).items():
                pending.setdefault(body, []).append((t, pose))
        flush(False)
    flush(True)


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
