"""What makes Foxglove animate the robot from an MCAP export: joint states, logs, the model.

    | # | MCAP                                   | from                                          |
    |---|----------------------------------------|-----------------------------------------------|
    | 1 | ``/<entity>/joint_states``:            | each tick's ``<entity>.joint_position`` (and  |
    |   | ``foxglove.JointStates``, one          | ``.joint_velocity`` when recorded): one       |
    |   | ``JointState`` per element name        | ``JointState(name, position, velocity)``      |
    | 2 | ``/lifecycle``, ``/events``:           | each record: level ERROR when it carries an   |
    |   | ``foxglove.Log``                       | ``error``, else INFO; ``name`` = the stream   |
    |   |                                        | (an event's emitter); message = the record    |
    | 3 | attachment ``mjcf/<name>``             | the MJCF the MuJoCo scene was compiled from,  |
    |   | (``application/xml``)                  | as the host recorded it in the run metadata   |
    |   |                                        | (``attributes.scene.backend.mjcf``: as        |
    |   |                                        | authored; what the seed randomized is beside  |
    |   |                                        | it, ``randomized``)                            |
    | 4 | attachment ``meshes/<resource>.stl``   | each mesh of a geometry assets record, as     |
    |   | (``model/stl``), when <= MESH_MAX bytes | binary STL                                    |
    | 5 | metadata ``fsr.attachments``           | per attachment: ``{"sha256", "bytes",         |
    |   |                                        | "media_type", "source"}`` (JSON)               |

A file recorded before the host kept the MJCF, or by a backend without one (synthetic,
Gymnasium), has no ``mjcf/`` attachment; ``fsr.run`` then says ``"mjcf": null``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from fastsim_record.export._source import POSITION_SUFFIX, VELOCITY_SUFFIX
from fastsim_record.export._stream import Channel, JsonRecord, TickRecord

__all__ = ["MESH_MAX", "Attachments", "JointStates", "log_message", "mjcf_of", "without_mjcf_text"]

MESH_MAX = 1 << 20  # meshes up to 1 MiB of STL are attached


def mjcf_of(attributes: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(name, text)`` of the MJCF the run metadata carries, or ``None``."""
    scene = attributes.get("scene")
    backend = scene.get("backend") if isinstance(scene, Mapping) else None
    mjcf = backend.get("mjcf") if isinstance(backend, Mapping) else None
    if isinstance(mjcf, Mapping) and isinstance(mjcf.get("text"), str) and mjcf["text"]:
        return str(mjcf.get("name") or "model.xml"), mjcf["text"]
    return None


def without_mjcf_text(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes for ``fsr.run``: the MJCF text (an attachment) replaced by its SHA-256."""
    out = json.loads(json.dumps(attributes))
    mjcf = out.get("scene", {}).get("backend", {}).get("mjcf") if isinstance(out.get("scene"), dict) else None
    if isinstance(mjcf, dict) and isinstance(mjcf.get("text"), str):
        mjcf["sha256"] = hashlib.sha256(mjcf.pop("text").encode()).hexdigest()
    return dict(out)


def stl(vertices: Any, faces: Any) -> bytes:
    """A mesh as binary STL (normals from the triangles' winding)."""
    v = np.asarray(vertices, np.float32).reshape(-1, 3)
    f = np.asarray(faces, np.int64).reshape(-1, 3)
    tri = v[f]  # (m, 3, 3)
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    norm = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.where(norm > 0, n / np.where(norm > 0, norm, 1), 0).astype(np.float32)
    rows = np.zeros(len(f), np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")]))
    rows["n"], rows["v"] = n, tri
    return b"fsr mesh".ljust(80, b"\0") + np.uint32(len(f)).tobytes() + rows.tobytes()


class Attachments:
    """The attachments of one MCAP file and their digests (rows 3-5)."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.digests: dict[str, dict[str, Any]] = {}

    def attach(self, name: str, media_type: str, data: bytes, source: str, t: int = 0) -> None:
        """Attach ``data`` once under ``name``, remembering its SHA-256."""
        if name in self.digests:
            return
        self.writer.attach(log_time=t, create_time=t, name=name, media_type=media_type, data=data)
        self.digests[name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                              "media_type": media_type, "source": source}

    def mesh(self, resource: str, vertices: Any, faces: Any, t: int) -> None:
        """A geometry assets record's mesh, when small enough."""
        if 84 + 50 * len(np.asarray(faces).reshape(-1, 3)) <= MESH_MAX:
            self.attach(f"meshes/{resource}.stl", "model/stl", stl(vertices, faces),
                        f"scene.geometry assets resource {resource}", t)

    def finish(self) -> None:
        """The ``fsr.attachments`` metadata record."""
        self.writer.write_metadata("fsr.attachments", {k: json.dumps(v, sort_keys=True)
                                                       for k, v in self.digests.items()})


class JointStates:
    """Row 1: the joint channels of the numeric streams, paired position with velocity."""

    def __init__(self, channels: Mapping[str, Channel]) -> None:
        self.pairs: list[tuple[str, Channel, Channel | None]] = []
        for name, ch in channels.items():
            if name.endswith(POSITION_SUFFIX):
                entity = name[: -len(POSITION_SUFFIX)]
                vel = channels.get(entity + VELOCITY_SUFFIX)
                self.pairs.append((f"/{entity}/joint_states", ch, vel if vel and vel.stream == ch.stream
                                   and vel.count == ch.count else None))

    def messages(self, m: Any, ts: Any, tick: TickRecord) -> list[tuple[str, Any]]:
        """``(topic, JointStates)`` of one tick (none for a stream without joint channels)."""
        out = []
        for topic, pos, vel in self.pairs:
            if pos.stream != tick.stream or pos.name in tick.fill:
                continue
            p = tick.values[pos.name].tolist()
            v = tick.values[vel.name].tolist() if vel is not None else [None] * len(p)
            out.append((topic, m.JointStates(timestamp=ts, joints=[
                m.JointState(name=n, position=a, velocity=b) for n, a, b in zip(pos.names, p, v, strict=True)])))
        return out


def log_message(m: Any, ts: Any, e: JsonRecord) -> Any:
    """Row 2: a lifecycle or event record as a ``foxglove.Log``."""
    data = e.data
    name = str(data.get("emitter") or e.stream)
    level = m.LogLevel.Error if data.get("error") else m.LogLevel.Info
    text = f"g{e.generation} {data.get('event', e.stream)}: {json.dumps(data, sort_keys=True)}"
    return m.Log(timestamp=ts, level=level, message=text, name=name, file="", line=0)
