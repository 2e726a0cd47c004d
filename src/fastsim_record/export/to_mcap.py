"""MCAP for Foxglove, written with foxglove-sdk (extra ``mcap``).

Topics (one message per FSR record of the stream it comes from):

    | topic                          | schema                      | from                              |
    |--------------------------------|-----------------------------|-----------------------------------|
    | ``/camera/<alias>/image``      | ``foxglove.CompressedImage``| ``cameras.<alias>.rgb``: the bytes |
    |                                |                             | as recorded (JPEG or PNG)         |
    | ``/camera/<alias>/calibration``| ``foxglove.CameraCalibration`` | ``.intrinsics``: K, P = [K | 0] |
    | ``/camera/<alias>/tf``         | ``foxglove.FrameTransforms``| ``.extrinsics``: world -> optical  |
    | ``/numeric/<channel>``         | JSON schema ``fsr.numeric`` | numeric channel: names + values    |
    | ``/lifecycle`` ``/events``     | JSON                        | the JSON streams, record as data   |
    | ``/control/audit`` ``/control/result`` | JSON                | control streams                    |
    | ``/scene``                     | ``foxglove.SceneUpdate``    | geometry assets records (meshes)   |
    | ``/tf/bodies``                 | ``foxglove.FrameTransforms``| geometry transforms: world -> body |
    |                                |                             | (and the poses of an assets record)|

``log_time`` is simulation time plus the generation's offset
(:func:`fastsim_record.export._source.generation_offsets`), so generations lie end to
end and time never goes backward.  Camera frames are ``<alias>_optical`` (OpenCV: x right,
y down, z forward), bodies ``body/<name>``, the parent of all is ``world``.  The Run's
metadata and the FSR validation receipt are MCAP metadata records ``fsr.run`` and
``fsr.validation``.  A RAW-RGB frame (legacy files) is the one case that is encoded (to
PNG), because ``CompressedImage`` has no raw format.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fastsim_record.export._port import ExportOptions, ExportSummary, MissingExtra, Progress
from fastsim_record.export._source import (
    encoded_frames,
    generation_offsets,
    geometry_payloads,
    receipt,
)
from fastsim_record.export._stream import (
    CalibrationSample,
    Channel,
    Tick,
    calibration_samples,
    json_records,
    numeric_channels,
    numeric_ticks,
)
from fastsim_record.reading import Recording
from fastsim_record.reading import open as open_recording

__all__ = ["McapExporter"]

WORLD = "world"
Emit = tuple[int, int, Callable[[], None]]  # (log_time, tie-break, write)


def _foxglove() -> Any:
    try:
        import foxglove
    except ImportError:
        raise MissingExtra("mcap", "mcap", "foxglove-sdk") from None
    return foxglove


class McapExporter:
    """One ``.mcap`` per source; several sources make ``out`` a folder of them."""

    name = "mcap"
    extra = "mcap"

    def export(
        self, sources: Sequence[Path], out: Path, options: ExportOptions, progress: Progress
    ) -> ExportSummary:
        """Write ``out`` (a file for one source, a folder for several)."""
        _foxglove()
        recs = [open_recording(p) for p in sources]
        progress.total(sum(sum(r.info.records.values()) for r in recs))
        counts: dict[str, int] = {}
        episodes = 0
        if len(recs) > 1:
            out.mkdir()
        for i, rec in enumerate(recs):
            target = out if len(recs) == 1 else out / f"{i:04d}-{Path(rec.path).stem}.mcap"
            for k, v in write_mcap(rec, target, progress).items():
                counts[k] = counts.get(k, 0) + v
            episodes += len(rec.generations())
            rec.close()
        return ExportSummary(out, episodes, counts)


def _ts(ns: int) -> Any:
    fg = _foxglove()
    return fg.messages.Timestamp(sec=ns // 1_000_000_000, nsec=ns % 1_000_000_000)


def write_mcap(rec: Recording, path: Path, progress: Progress) -> dict[str, int]:
    """Write one recording as one MCAP file; returns messages per topic."""
    fg = _foxglove()
    from foxglove.mcap import MCAPCompression, MCAPWriteOptions

    ctx = fg.Context()
    opts = MCAPWriteOptions(compression=MCAPCompression.Lz4, profile="")
    counts: dict[str, int] = {}
    offsets = generation_offsets(rec)
    info = rec.info
    with fg.open_mcap(str(path), context=ctx, writer_options=opts) as writer:
        writer.write_metadata("fsr.run", _strings({
            "path": rec.path, "run_id": info.run_id, "completion_id": info.completion_id,
            "name": info.name, "backend": info.backend, "seed": info.seed,
            "completion": info.completion, "completion_reason": info.completion_reason,
            "generations": list(info.generations), "generation_offsets_ns": offsets,
            "attributes": info.attributes,
        }))
        writer.write_metadata("fsr.validation", _strings(receipt(rec.path)))
        sources: list[Iterator[Emit]] = []
        for order, cam in enumerate(rec.cameras()):
            sources.append(_camera_images(fg, ctx, rec, cam, offsets, counts, order))
            sources.append(_camera_calibration(fg, ctx, rec, cam, offsets, counts, order))
        sources.extend(_numeric(fg, ctx, rec, offsets, counts))
        sources.append(_json_streams(fg, ctx, rec, offsets, counts))
        sources.append(_geometry(fg, ctx, rec, offsets, counts))
        done = 0
        for _, _, write in heapq.merge(*sources, key=lambda e: (e[0], e[1])):
            write()
            done += 1
            if done % 256 == 0:
                progress.advance(256)
        progress.advance(done % 256)
    return counts


def _strings(obj: dict[str, Any]) -> dict[str, str]:
    return {k: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in obj.items()}


def _count(counts: dict[str, int], topic: str) -> None:
    counts[topic] = counts.get(topic, 0) + 1


def _camera_images(
    fg: Any, ctx: Any, rec: Recording, cam: str, offsets: dict[int, int], counts: dict[str, int], order: int
) -> Iterator[Emit]:
    topic = f"/camera/{cam}/image"
    ch = fg.channels.CompressedImageChannel(topic, context=ctx)
    frame_id = f"{cam}_optical"
    for f in encoded_frames(rec, cam):
        t = f.time_ns + offsets[f.generation]
        data, fmt = f.data, f.codec
        if fmt == "raw_rgb":  # CompressedImage has no raw format: the one re-encode
            data, fmt = _png(rec, cam, f.data), "png"

        def write(t: int = t, data: bytes = data, fmt: str = fmt) -> None:
            ch.log(fg.messages.CompressedImage(timestamp=_ts(t), frame_id=frame_id, data=data, format=fmt),
                   log_time=t)
            _count(counts, topic)

        yield t, 10 + 3 * order, write


def _png(rec: Recording, cam: str, raw: bytes) -> bytes:
    import cv2

    spec = _descriptor(rec, cam)
    rgb = np.frombuffer(raw, np.uint8).reshape(int(spec["height"]), int(spec["width"]), 3)
    _ok, png = cv2.imencode(".png", rgb[:, :, ::-1])
    return bytes(png.data)


def _descriptor(rec: Recording, cam: str) -> dict[str, Any]:
    from fastsim_record.fsr import FsrReader

    with FsrReader(rec.path) as reader:
        return dict(reader.stream(f"cameras.{cam}.rgb").codec)


def _camera_calibration(
    fg: Any, ctx: Any, rec: Recording, cam: str, offsets: dict[int, int], counts: dict[str, int], order: int
) -> Iterator[Emit]:
    desc = _descriptor(rec, cam)
    width, height = int(desc.get("width", 0)), int(desc.get("height", 0))
    frame_id = f"{cam}_optical"
    cal_topic, tf_topic = f"/camera/{cam}/calibration", f"/camera/{cam}/tf"
    cal_ch = fg.channels.CameraCalibrationChannel(cal_topic, context=ctx)
    tf_ch = fg.channels.FrameTransformsChannel(tf_topic, context=ctx)
    m = fg.messages
    for sample in calibration_samples(rec.path, cam):
        t = sample.time_ns + offsets[sample.generation]

        def write(t: int = t, c: CalibrationSample = sample) -> None:
            p = np.zeros((3, 4))
            p[:, :3] = c.k
            tr, q = c.translation.tolist(), c.quaternion_xyzw.tolist()
            cal_ch.log(m.CameraCalibration(
                timestamp=_ts(t), frame_id=frame_id, width=width, height=height,
                distortion_model="plumb_bob", D=[0.0] * 5, K=c.k.reshape(-1).tolist(),
                R=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], P=p.reshape(-1).tolist(),
            ), log_time=t)
            tf_ch.log(m.FrameTransforms(transforms=[m.FrameTransform(
                timestamp=_ts(t), parent_frame_id=WORLD, child_frame_id=frame_id,
                translation=m.Vector3(x=tr[0], y=tr[1], z=tr[2]),
                rotation=m.Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]),
            )]), log_time=t)
            _count(counts, cal_topic)
            _count(counts, tf_topic)

        yield t, 11 + 3 * order, write


def _numeric(fg: Any, ctx: Any, rec: Recording, offsets: dict[int, int], counts: dict[str, int]) -> list[Iterator[Emit]]:
    from fastsim_record.fsr import FsrReader

    with FsrReader(rec.path) as reader:
        channels = numeric_channels(reader)
    by_stream: dict[str, list[Channel]] = {}
    for ch in channels.values():
        by_stream.setdefault(ch.stream, []).append(ch)
    return [_numeric_stream(fg, ctx, rec, stream, chs, offsets, counts) for stream, chs in by_stream.items()]


def _numeric_stream(
    fg: Any, ctx: Any, rec: Recording, stream: str, chs: list[Channel], offsets: dict[int, int],
    counts: dict[str, int],
) -> Iterator[Emit]:
    out = {}
    for ch in chs:
        schema = {
            "type": "object", "title": f"fsr.numeric {ch.name}",
            "properties": {
                "generation": {"type": "integer"},
                "names": {"type": "array", "items": {"type": "string"}},
                "units": {"type": "array", "items": {"type": "string"}},
                "values": {"type": "array", "items": {"type": "number"}, "description": ", ".join(ch.names)},
            },
        }
        out[ch.name] = (fg.Channel(f"/numeric/{ch.name}", schema=schema, context=ctx), ch)
    for tick in numeric_ticks(rec.path, stream, chs):
        t = tick.time_ns + offsets[tick.generation]

        def write(t: int = t, tick: Tick = tick) -> None:
            for name, (channel, ch) in out.items():
                channel.log({"generation": tick.generation, "names": list(ch.names), "units": list(ch.units),
                             "values": tick.values[name].tolist()}, log_time=t)
                _count(counts, f"/numeric/{name}")

        yield t, 1, write


_JSON_TOPICS = {"lifecycle": "/lifecycle", "events": "/events", "control.audit": "/control/audit",
                "control.result": "/control/result"}


def _json_streams(fg: Any, ctx: Any, rec: Recording, offsets: dict[int, int], counts: dict[str, int]) -> Iterator[Emit]:
    chans: dict[str, Any] = {}
    for e in json_records(rec.path):
        topic = _JSON_TOPICS.get(e.stream, "/" + e.stream.replace(".", "/"))
        if topic not in chans:
            chans[topic] = fg.Channel(topic, message_encoding="json", context=ctx)
        t = e.time_ns + offsets[e.generation]
        msg = {"generation": e.generation, "sim_time_ns": e.time_ns, "stream": e.stream, "record": e.data}

        def write(t: int = t, msg: dict[str, Any] = msg, topic: str = topic) -> None:
            chans[topic].log(msg, log_time=t)
            _count(counts, topic)

        yield t, 0, write


def _geometry(fg: Any, ctx: Any, rec: Recording, offsets: dict[int, int], counts: dict[str, int]) -> Iterator[Emit]:
    from fastsim_record.adapters.geometry import decode_assets, decode_transforms, record_kind

    m = fg.messages
    scene: Any = None
    tf: Any = None
    meshes: dict[str, tuple[Any, Any]] = {}

    def _tf(t: int, poses: dict[str, Any]) -> None:
        nonlocal tf
        if tf is None:
            tf = fg.channels.FrameTransformsChannel("/tf/bodies", context=ctx)
        tf.log(m.FrameTransforms(transforms=[_body_tf(m, t, b, p) for b, p in poses.items()]), log_time=t)
        _count(counts, "/tf/bodies")
    for time_ns, gen, payload in geometry_payloads(rec):
        t = time_ns + offsets[gen]
        if record_kind(payload) == "assets":
            assets = decode_assets(payload)
            for rid in assets.blobs:
                meshes[rid] = assets.mesh(rid)
            msg, static = _scene_update(m, assets.manifest, meshes, t)
            if scene is None:
                scene = fg.channels.SceneUpdateChannel("/scene", context=ctx)

            def write_scene(t: int = t, msg: Any = msg, static: Any = static, scene: Any = scene) -> None:
                scene.log(msg, log_time=t)
                _count(counts, "/scene")
                if static is not None:
                    _tf(t, static)

            yield t, 2, write_scene
        else:
            poses = decode_transforms(payload)
            yield t, 2, lambda t=t, poses=poses: _tf(t, poses)  # type: ignore[misc]



def _body_tf(m: Any, t: int, body: str, pose: Any) -> Any:
    p = [float(x) for x in pose]
    return m.FrameTransform(
        timestamp=_ts(t), parent_frame_id=WORLD, child_frame_id=f"body/{body}",
        translation=m.Vector3(x=p[0], y=p[1], z=p[2]), rotation=m.Quaternion(x=p[3], y=p[4], z=p[5], w=p[6]),
    )


def _scene_update(m: Any, manifest: Any, meshes: dict[str, tuple[Any, Any]], t: int) -> tuple[Any, Any]:
    entities = []
    static: dict[str, Any] = {}
    for body in manifest.get("bodies", []):
        if isinstance(body.get("pose"), list) and len(body["pose"]) == 7:
            static[str(body["name"])] = body["pose"]
    for item in manifest.get("items", []):
        lp = [float(x) for x in (item.get("local_pose") or [0, 0, 0, 0, 0, 0, 1])]
        pose = m.Pose(position=m.Vector3(x=lp[0], y=lp[1], z=lp[2]),
                      orientation=m.Quaternion(x=lp[3], y=lp[4], z=lp[5], w=lp[6]))
        size = [float(x) for x in (item.get("size") or [])]
        shape = item.get("shape")
        kw: dict[str, Any] = {}
        color = m.Color(r=0.7, g=0.7, b=0.75, a=1.0)
        if item.get("resource") in meshes:
            v, f = meshes[item["resource"]]
            pts = [m.Point3(x=float(a), y=float(b), z=float(c)) for a, b, c in v.tolist()]
            kw["triangles"] = [m.TriangleListPrimitive(pose=pose, points=pts, color=color,
                                                       indices=f.reshape(-1).tolist())]
        elif shape == "box" and len(size) >= 3:
            kw["cubes"] = [m.CubePrimitive(pose=pose, size=m.Vector3(x=2 * size[0], y=2 * size[1], z=2 * size[2]),
                                           color=color)]
        elif shape == "plane" and len(size) >= 2:
            kw["cubes"] = [m.CubePrimitive(pose=pose, size=m.Vector3(x=2 * size[0], y=2 * size[1], z=0.001),
                                           color=color)]
        elif shape == "sphere" and size:
            kw["spheres"] = [m.SpherePrimitive(pose=pose, size=m.Vector3(x=2 * size[0], y=2 * size[0], z=2 * size[0]),
                                               color=color)]
        else:
            continue
        entities.append(m.SceneEntity(timestamp=_ts(t), frame_id=f"body/{item.get('body')}",
                                      id=str(item.get("name")), frame_locked=True, **kw))
    return m.SceneUpdate(entities=entities), (static or None)
