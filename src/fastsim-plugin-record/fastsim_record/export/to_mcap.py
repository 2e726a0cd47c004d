"""MCAP for Foxglove, written with foxglove-sdk (extra ``mcap``).

Topics (one message per FSR record of the stream it comes from):

    | topic                          | schema                      | from                              |
    |--------------------------------|-----------------------------|-----------------------------------|
    | ``/camera/<alias>/image``      | ``foxglove.CompressedImage``| ``cameras.<alias>.rgb``: the bytes |
    |                                |                             | as recorded (JPEG or PNG; a grey  |
    |                                |                             | or RGBA camera's PNG as it is:    |
    |                                |                             | mono, or colour with its alpha)   |
    | ``/camera/<alias>/calibration``| ``foxglove.CameraCalibration`` | ``.intrinsics``: K, P = [K | 0] |
    | ``/camera/<alias>/tf``         | ``foxglove.FrameTransforms``| ``.extrinsics``: world -> optical  |
    | ``/numeric/<channel>``         | JSON schema ``fsr.numeric`` | numeric channel: names + values    |
    | ``/<entity>/joint_states``     | ``foxglove.JointStates``    | ``<entity>.joint_position`` (and   |
    |                                |                             | ``.joint_velocity``) per tick      |
    | ``/lifecycle`` ``/events``     | ``foxglove.Log``            | the JSON streams, one Log a record |
    | ``/control/audit`` ``/control/result`` | JSON                | control streams                    |
    | ``/command/<target>.<command>``| JSON schema ``fsr.numeric`` | an issued command's vector, beside |
    |                                |                             | the joint states (``_commands``)   |
    | ``/scene``                     | ``foxglove.SceneUpdate``    | geometry assets records (meshes)   |
    | ``/tf/bodies``                 | ``foxglove.FrameTransforms``| geometry transforms: world -> body |
    |                                |                             | (and the poses of an assets record)|

``log_time`` is simulation time plus the generation's offset
(:func:`fastsim_record.export._source.generation_offsets`), so generations lie end to
end and time never goes backward.  Camera frames are ``<alias>_optical`` (OpenCV: x right,
y down, z forward), bodies ``body/<name>``, the parent of all is ``world``.  The Run's
metadata and the FSR validation receipt are MCAP metadata records ``fsr.run`` and
``fsr.validation``; the Run's MJCF (and each small mesh) are attachments, their SHA-256
in the metadata record ``fsr.attachments`` (``_mcap_robot``).  A RAW-RGB frame (legacy files) is the one case that is encoded (to
PNG), because ``CompressedImage`` has no raw format.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

from fastsim_record.export import _stream as records
from fastsim_record.export._commands import CommandSeries, command_series
from fastsim_record.export._mcap_robot import (
    Attachments,
    JointStates,
    log_message,
    mjcf_of,
    without_mjcf_text,
)
from fastsim_record.export._port import Progress, load_extra
from fastsim_record.export._source import (
    PerSourceExporter,
    generation_offsets,
    receipt,
)
from fastsim_record.export._stream import (
    CalibrationRecord,
    Channel,
    FrameRecord,
    JsonRecord,
    TickRecord,
)
from fastsim_recording_format import names
from fastsim_recording_format.codecs.geometry import decode_assets, decode_transforms, record_kind
from fastsim_recording_format.reading import Recording
from fastsim_recording_format.reading.decoded import GeometryRecord

__all__ = ["McapExporter"]

WORLD = "world"


def _foxglove() -> Any:
    return load_extra("mcap", "mcap", "foxglove", package="foxglove-sdk")[0]



def _ts(ns: int) -> Any:
    fg = _foxglove()
    return fg.messages.Timestamp(sec=ns // 1_000_000_000, nsec=ns % 1_000_000_000)


def write_mcap(rec: Recording, path: Path, progress: Progress) -> dict[str, int]:
    """Write one recording as one MCAP file, in one pass in recording order; returns
    messages per topic."""
    fg = _foxglove()
    from foxglove.mcap import MCAPCompression, MCAPWriteOptions

    ctx = fg.Context()
    opts = MCAPWriteOptions(compression=MCAPCompression.Lz4, profile="")
    offsets = generation_offsets(rec)
    info = rec.info
    with fg.open_mcap(str(path), context=ctx, writer_options=opts) as writer:
        writer.write_metadata("fsr.run", _strings({
            "path": rec.path, "run_id": info.run_id, "completion_id": info.completion_id,
            "name": info.name, "backend": info.backend, "seed": info.seed,
            "completion": info.completion, "completion_reason": info.completion_reason,
            "generations": list(info.generations), "generation_offsets_ns": offsets,
            "attributes": without_mjcf_text(info.attributes), "mjcf": (mjcf_of(info.attributes) or (None,))[0],
        }))
        writer.write_metadata("fsr.validation", _strings(receipt(rec.path)))
        attachments = Attachments(writer)
        mjcf = mjcf_of(info.attributes)
        if mjcf is not None:
            attachments.attach(f"mjcf/{mjcf[0]}", "application/xml", mjcf[1].encode(),
                               "run metadata attributes.scene.backend.mjcf")
        out = _Topics(fg, ctx, rec, attachments)
        done = 0
        write = {FrameRecord: out.image, CalibrationRecord: out.calibration, TickRecord: out.tick,
                 JsonRecord: out.json, GeometryRecord: out.geometry}
        for r in records.export_records(rec.path):
            write[type(r)](r, r.time_ns + offsets[r.generation])  # type: ignore[operator]
            done += 3 if type(r) is CalibrationRecord else 1
            if done >= 256:
                progress.advance(done)
                done = 0
        progress.advance(done)
        attachments.finish()
    return out.counts


class _Topics:
    """The channels of one MCAP file, made on first use, and the messages per topic."""

    def __init__(self, fg: Any, ctx: Any, rec: Recording, attachments: Attachments) -> None:
        from fastsim_recording_format import FsrReader

        self.fg, self.ctx, self.m, self.rec = fg, ctx, fg.messages, rec
        self.counts: dict[str, int] = {}
        self.chans: dict[str, Any] = {}
        self.attachments = attachments
        with FsrReader(rec.path) as reader:
            self.numeric = records.numeric_channels(reader)
        self.joints = JointStates(self.numeric)
        self.sizes: dict[str, tuple[int, int]] = {}
        self.meshes: dict[str, tuple[Any, Any]] = {}
        self.attributes = rec.info.attributes  # the Run's declared controls name command elements

    def _log(self, topic: str, make: Any, msg: Any, t: int) -> None:
        ch = self.chans.get(topic)
        if ch is None:
            ch = self.chans[topic] = make(topic)
        ch.log(msg, log_time=t)
        self.counts[topic] = self.counts.get(topic, 0) + 1

    def _typed(self, cls: str) -> Any:
        return lambda topic: getattr(self.fg.channels, cls)(topic, context=self.ctx)

    def image(self, f: FrameRecord, t: int) -> None:
        """A frame's recorded bytes as a CompressedImage."""
        data, fmt, cam = f.payload, f.codec.codec, f.camera
        if fmt == "raw_rgb":  # CompressedImage has no raw format: the one re-encode
            data, fmt = records.png_bytes(f), "png"
        msg = self.m.CompressedImage(timestamp=_ts(t), frame_id=f"{cam}_optical", data=data, format=fmt)
        self._log(f"/camera/{cam}/image", self._typed("CompressedImageChannel"), msg, t)

    def calibration(self, c: CalibrationRecord, t: int) -> None:
        """CameraCalibration (K, P = [K | 0]) and the world-to-optical FrameTransforms."""
        records.check_calibrated(self.rec.path, c)
        m, cam = self.m, c.camera
        if cam not in self.sizes:
            desc = _descriptor(self.rec, cam)
            self.sizes[cam] = (int(desc.get("width", 0)), int(desc.get("height", 0)))
        width, height = self.sizes[cam]
        p = np.zeros((3, 4))
        p[:, :3] = c.k
        tr, q = c.translation.tolist(), c.quaternion_xyzw.tolist()
        frame_id = f"{cam}_optical"
        self._log(f"/camera/{cam}/calibration", self._typed("CameraCalibrationChannel"), m.CameraCalibration(
            timestamp=_ts(t), frame_id=frame_id, width=width, height=height,
            distortion_model="plumb_bob", D=[0.0] * 5, K=c.k.reshape(-1).tolist(),
            R=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], P=p.reshape(-1).tolist(),
        ), t)
        self._log(f"/camera/{cam}/tf", self._typed("FrameTransformsChannel"), m.FrameTransforms(transforms=[
            m.FrameTransform(timestamp=_ts(t), parent_frame_id=WORLD, child_frame_id=frame_id,
                             translation=m.Vector3(x=tr[0], y=tr[1], z=tr[2]),
                             rotation=m.Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]))]), t)

    def tick(self, tick: TickRecord, t: int) -> None:
        """One JSON-schema message per channel of the tick, with names, units and values
        (a generation's last tick: its per-step channels are a fill, not written)."""
        fill = tick.fill
        for topic, msg in self.joints.messages(self.m, _ts(t), tick):
            self._log(topic, self._typed("JointStatesChannel"), msg, t)
        for name, values in tick.values.items():
            if name in fill:
                continue
            ch = self.numeric[name]
            msg = {"generation": tick.generation, "names": list(ch.names), "units": list(ch.units),
                   "values": values.tolist()}
            self._log(f"/numeric/{name}", lambda topic, ch=ch: self.fg.Channel(
                topic, schema=_numeric_schema(ch), context=self.ctx), msg, t)

    def json(self, e: JsonRecord, t: int) -> None:
        """A lifecycle or event record as a Log; a control record as JSON."""
        topic = _JSON_TOPICS.get(e.stream, "/" + e.stream.replace(".", "/"))
        if e.stream in ("lifecycle", "events"):
            self._log(topic, self._typed("LogChannel"), log_message(self.m, _ts(t), e), t)
            return
        msg = {"generation": e.generation, "sim_time_ns": e.time_ns, "stream": e.stream, "record": e.data}
        self._log(topic, lambda topic: self.fg.Channel(topic, message_encoding="json", context=self.ctx), msg, t)
        series = command_series(e.stream, e.data, self.attributes)
        if series is not None:
            msg = {"generation": e.generation, "names": list(series.names), "units": list(series.units),
                   "values": series.values.tolist()}
            self._log(f"/command/{series.name}", lambda topic, ch=series: self.fg.Channel(
                topic, schema=_numeric_schema(ch), context=self.ctx), msg, t)

    def geometry(self, g: GeometryRecord, t: int) -> None:
        """An assets record as a SceneUpdate (and its poses); a transforms record as FrameTransforms."""
        payload = g.payload
        if record_kind(payload) == "assets":
            assets = decode_assets(payload)
            for rid in assets.blobs:
                self.meshes[rid] = assets.mesh(rid)
                self.attachments.mesh(rid, *self.meshes[rid], t)
            msg, poses = _scene_update(self.m, assets.manifest, self.meshes, t)
            self._log("/scene", self._typed("SceneUpdateChannel"), msg, t)
        else:
            poses = decode_transforms(payload)
        if poses:
            msg = self.m.FrameTransforms(transforms=[_body_tf(self.m, t, b, p) for b, p in poses.items()])
            self._log("/tf/bodies", self._typed("FrameTransformsChannel"), msg, t)


def _numeric_schema(ch: Channel | CommandSeries) -> dict[str, Any]:
    return {
        "type": "object", "title": f"fsr.numeric {ch.name}",
        "properties": {
            "generation": {"type": "integer"},
            "names": {"type": "array", "items": {"type": "string"}},
            "units": {"type": "array", "items": {"type": "string"}},
            "values": {"type": "array", "items": {"type": "number"}, "description": ", ".join(ch.names)},
        },
    }


_JSON_TOPICS = {"lifecycle": "/lifecycle", "events": "/events", "control.audit": "/control/audit",
                "control.result": "/control/result"}


def _strings(obj: dict[str, Any]) -> dict[str, str]:
    return {k: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in obj.items()}


def _descriptor(rec: Recording, cam: str) -> dict[str, Any]:
    from fastsim_recording_format import FsrReader

    with FsrReader(rec.path) as reader:
        return dict(reader.stream(names.rgb_stream(cam)).codec)


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


#: One ``.mcap`` per source; several sources make ``out`` a folder of them.
McapExporter = functools.partial(PerSourceExporter, "mcap", "mcap", ".mcap", write_mcap, _foxglove)
