"""``scene.geometry@2`` records for the FSR Viewer: deduplicated, chunked, static once.

Core publishes one :class:`~fastsim_contract.render_services.GeometryAssets` envelope
and then :class:`~fastsim_contract.render_services.GeometryTransforms` envelopes at
``streams.geometry.rate_hz``.  The writer worker turns each into one record of the
``geometry`` stream (kind ``scene.geometry@2``) with a :class:`GeometryEncoder` (stateful: it remembers which
resources the file already stores).

Encoding rules:

    | # | rule                                                                             |
    |---|----------------------------------------------------------------------------------|
    | 1 | the catalog is ``select_catalog(available)``: visual preferred, collision or     |
    |   | planning only when there is no visual catalog; anything else is refused          |
    | 2 | materials are never written; particle items (fluid) never enter the asset set    |
    | 3 | a mesh resource is identified by the SHA-256 of its canonical blob; identical    |
    |   | content is stored once per file, however many items or assets records use it     |
    | 4 | a stored blob is split into chunks of at most ``CHUNK_BYTES`` bytes              |
    | 5 | static bodies are posed once, in the assets record; transform records carry      |
    |   | only dynamic and kinematic bodies, and only after the assets record              |

Canonical resource blob: ``u32 V | u32 F | V*3 float32 LE | F*3 uint32 LE``; its id is
``"sha256:" + hexdigest``.

Envelope payload: a mapping ``{"assets": GeometryAssets}`` or ``{"transforms":
GeometryTransforms}`` (Core's envelopes carry mappings).

Record payload (both kinds, self-describing): ``u32 manifest_length | manifest
(canonical JSON) | zero pad to 8 | binary area``.

* assets: the manifest is ``{"kind": "assets", "schema": "fastsim-scene-geometry/2",
  "catalog", "bodies": [{name, motion, pose}], "items": [{name, body, shape, size,
  local_pose, resource}], "resources": [{id, vertices, faces, nbytes, stored, chunks:
  [[offset, length], ...]}]}``; a resource with ``stored: false`` was written by an
  earlier assets record and has no chunks here.  Chunk offsets are relative to the
  binary area and tile it exactly.
* transforms: the manifest is ``{"kind": "transforms", "schema", "bodies": [...]}``
  and the binary area holds ``N * 7`` little-endian float64 poses in that order.

Decoding is bounded: the manifest is at most ``MAX_MANIFEST_BYTES`` (16 MiB), holds at
most one ``{`` or ``[`` per 8 bytes (checked before it is parsed), and a nesting too deep
for the parser is one ``GeometryPayloadError`` line, never a ``RecursionError``.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Mapping
from typing import Any, Final, NoReturn

import attrs
import numpy as np
from numpy.typing import NDArray

from fastsim_contract.render_services import (
    MOTIONS,
    SHAPES,
    GeometryAssets,
    GeometryCatalog,
    GeometryTransforms,
    MeshResource,
    select_catalog,
)
from fastsim_record.errors import RecordError

__all__ = [
    "CHUNK_BYTES",
    "SCHEMA",
    "STREAM_CODEC",
    "STREAM_NAME",
    "DecodedAssets",
    "GeometryEncoder",
    "GeometryPayloadError",
    "decode_assets",
    "decode_transforms",
    "record_kind",
    "resource_blob",
]

SCHEMA: Final = "fastsim-scene-geometry/2"
STREAM_NAME: Final = "geometry"
CHUNK_BYTES: Final = 1 << 20
MAX_MANIFEST_BYTES: Final = 16 << 20
_U32 = struct.Struct("<I")
_COUNTS = struct.Struct("<II")

STREAM_CODEC: Final[Mapping[str, object]] = {
    "media_type": "application/x-fastsim-scene-geometry",
    "payload_codec": "fastsim-scene-geometry/2",
    "schema": SCHEMA,
    "chunk_bytes": CHUNK_BYTES,
    "service": "scene.geometry@2",
}


class GeometryPayloadError(RecordError):
    """A geometry envelope or payload breaks the ``scene.geometry@2`` rules."""


def _fail(message: str) -> NoReturn:
    raise GeometryPayloadError(f"scene.geometry: {message}")


def _canonical(value: object) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def _floats(values: object, n: int, what: str) -> list[float]:
    try:
        out = [float(v) for v in values]  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        _fail(f"{what}: expected {n} numbers")
    if len(out) != n or not all(math.isfinite(v) for v in out):
        _fail(f"{what}: expected {n} finite numbers, got {values!r}")
    return out


def resource_blob(resource: MeshResource) -> tuple[str, bytes]:
    """The canonical blob of a mesh resource and its content id (rule 3)."""
    vertices = np.asarray(resource.vertices)
    faces = np.asarray(resource.faces)
    if vertices.ndim != 2 or vertices.shape[1] != 3 or vertices.dtype.kind != "f":
        _fail(f"resource {resource.resource_id!r}: vertices must be float (V, 3)")
    if faces.ndim != 2 or faces.shape[1] != 3 or faces.dtype.kind not in "iu":
        _fail(f"resource {resource.resource_id!r}: faces must be integer (F, 3)")
    if faces.size and (faces.min() < 0 or faces.max() >= vertices.shape[0]):
        _fail(f"resource {resource.resource_id!r}: a face indexes a missing vertex")
    blob = b"".join(
        (
            _COUNTS.pack(vertices.shape[0], faces.shape[0]),
            np.ascontiguousarray(vertices, dtype="<f4").tobytes(),
            np.ascontiguousarray(faces, dtype="<u4").tobytes(),
        )
    )
    return "sha256:" + hashlib.sha256(blob).hexdigest(), blob


@attrs.define(eq=False)
class GeometryEncoder:
    """Encodes ``geometry`` envelopes into ``scene.geometry`` records (worker only)."""

    _stored: set[str] = attrs.field(factory=set, init=False)
    _moving: frozenset[str] | None = attrs.field(default=None, init=False)

    codec: Mapping[str, object] = STREAM_CODEC
    last_metadata: dict[str, object] = attrs.field(factory=dict, init=False)

    def encode(self, payload: object) -> bytes:
        """One envelope payload -> the record payload (``last_metadata`` describes it)."""
        value = payload
        if isinstance(payload, Mapping) and len(payload) == 1:
            value = next(iter(payload.values()))
        if isinstance(value, GeometryAssets):
            data, self.last_metadata = self._assets(value)
        elif isinstance(value, GeometryTransforms):
            data, self.last_metadata = self._transforms(value)
        else:
            _fail(f"unexpected payload {type(value).__name__}")
        return data

    def _assets(self, assets: GeometryAssets) -> tuple[bytes, dict[str, object]]:
        catalog = assets.catalog
        expected = select_catalog(assets.available)
        if catalog.kind != expected:
            _fail(f"catalog {catalog.kind!r} captured although {expected!r} is preferred (rule 1)")
        bodies = _bodies(catalog)
        by_id = {r.resource_id: r for r in assets.resources}
        blobs: dict[str, tuple[str, bytes]] = {}
        items: list[dict[str, object]] = []
        for item in catalog.items:
            if item.particles:
                continue  # rule 2: particle-fluid visuals never enter the asset set
            if item.body not in bodies:
                _fail(f"item {item.name!r}: unknown body {item.body!r}")
            if item.shape not in SHAPES:
                _fail(f"item {item.name!r}: unknown shape {item.shape!r}")
            content: str | None = None
            if item.shape == "mesh":
                if item.resource not in by_id:
                    _fail(f"item {item.name!r}: mesh resource {item.resource!r} was not read")
                rid = str(item.resource)
                if rid not in blobs:
                    blobs[rid] = resource_blob(by_id[rid])
                content = blobs[rid][0]
            items.append(
                {
                    "name": item.name,
                    "body": item.body,
                    "shape": item.shape,
                    "size": _floats(item.size, len(tuple(item.size)), f"item {item.name!r} size"),
                    "local_pose": _floats(item.local_pose, 7, f"item {item.name!r} local_pose"),
                    "resource": content,
                }
            )
        resources: list[dict[str, object]] = []
        chunks: list[bytes] = []
        cursor = 0
        new = reused = 0
        for content, blob in sorted({v[0]: v[1] for v in blobs.values()}.items()):
            entry: dict[str, object] = {"id": content, "nbytes": len(blob), "stored": False}
            entry["vertices"], entry["faces"] = _COUNTS.unpack_from(blob)
            spans: list[list[int]] = []
            if content in self._stored:
                reused += 1
            else:
                entry["stored"] = True
                for start in range(0, len(blob), CHUNK_BYTES):
                    piece = blob[start : start + CHUNK_BYTES]
                    spans.append([cursor, len(piece)])
                    chunks.append(piece)
                    cursor += len(piece)
                new += 1
            entry["chunks"] = spans
            resources.append(entry)
        manifest = _canonical(
            {
                "kind": "assets",
                "schema": SCHEMA,
                "catalog": catalog.kind,
                "bodies": [bodies[name] for name in sorted(bodies)],
                "items": items,
                "resources": resources,
            }
        )
        payload = b"".join((_head(manifest), *chunks))
        self._stored.update(r["id"] for r in resources if r["stored"])  # type: ignore[misc]
        self._moving = frozenset(n for n, b in bodies.items() if b["motion"] != "static")
        meta: dict[str, object] = {
            "kind": "assets",
            "schema": SCHEMA,
            "catalog": catalog.kind,
            "resources_stored": new,
            "resources_reused": reused,
            "chunks": len(chunks),
        }
        return payload, meta

    def _transforms(self, sample: GeometryTransforms) -> tuple[bytes, dict[str, object]]:
        if self._moving is None:
            _fail("a transforms sample arrived before the assets record (rule 5)")
        names = tuple(sample.bodies)
        static = [n for n in names if n not in self._moving]
        if static:
            _fail(f"transforms for static or unknown bodies {static} (rule 5)")
        poses = np.asarray(sample.poses)
        if poses.shape != (len(names), 7) or poses.dtype.kind != "f":
            _fail(f"transforms: expected float ({len(names)}, 7) poses, got {poses.shape}")
        manifest = _canonical({"kind": "transforms", "schema": SCHEMA, "bodies": list(names)})
        data = _head(manifest) + np.ascontiguousarray(poses, dtype="<f8").tobytes()
        return data, {"kind": "transforms", "bodies": len(names)}


def _head(manifest: bytes) -> bytes:
    head = _U32.pack(len(manifest)) + manifest
    return head + bytes(_pad8(len(head)) - len(head))


def _bodies(catalog: GeometryCatalog) -> dict[str, dict[str, object]]:
    bodies: dict[str, dict[str, object]] = {}
    for body in catalog.bodies:
        if body.motion not in MOTIONS:
            _fail(f"body {body.name!r}: motion must be one of {MOTIONS}, got {body.motion!r}")
        if body.name in bodies:
            _fail(f"body {body.name!r} appears twice")
        bodies[body.name] = {
            "name": body.name,
            "motion": body.motion,
            "pose": _floats(body.pose, 7, f"body {body.name!r} pose"),
        }
    return bodies


@attrs.frozen
class DecodedAssets:
    """A decoded assets record: its manifest and the resources it stores, by id."""

    manifest: Mapping[str, Any]
    blobs: Mapping[str, bytes]

    def mesh(self, content: str) -> tuple[NDArray[np.float32], NDArray[np.uint32]]:
        """Vertices and faces of a resource this record stores."""
        blob = self.blobs[content]
        v, f = _COUNTS.unpack_from(blob)
        vertices = np.frombuffer(blob, "<f4", 3 * v, _COUNTS.size).reshape(v, 3)
        faces = np.frombuffer(blob, "<u4", 3 * f, _COUNTS.size + 12 * v).reshape(f, 3)
        return vertices, faces


def _split(payload: bytes | memoryview) -> tuple[dict[str, Any], bytes, int]:
    data = bytes(payload)
    if len(data) < 4:
        _fail("payload is shorter than its manifest length")
    (length,) = _U32.unpack_from(data)
    if length > MAX_MANIFEST_BYTES or 4 + length > len(data):
        _fail(f"manifest length {length} does not fit the {len(data)}-byte payload")
    raw = data[4 : 4 + length]
    if raw.count(b"{") + raw.count(b"[") > length // 8 + 4:
        _fail("manifest nests more objects and arrays than its entries can hold")
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        _fail(f"manifest is not JSON: {exc}")
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        _fail(f"manifest schema must be {SCHEMA!r}")
    return manifest, data, _pad8(4 + length)


def record_kind(payload: bytes | memoryview) -> str:
    """``assets`` or ``transforms``."""
    return str(_split(payload)[0].get("kind"))


def decode_assets(payload: bytes | memoryview) -> DecodedAssets:
    """Decode an assets payload; offsets are checked before any slice is taken."""
    manifest, data, area = _split(payload)
    if manifest.get("kind") != "assets":
        _fail("not an assets record")
    cursor = 0
    blobs: dict[str, bytes] = {}
    for entry in manifest.get("resources", []):
        if not isinstance(entry, dict) or not isinstance(entry.get("chunks"), list):
            _fail("a resource entry must be an object with chunks")
        parts = []
        for span in entry["chunks"]:
            if (
                not isinstance(span, list) or len(span) != 2 or span[0] != cursor
                or not isinstance(span[1], int) or not 0 < span[1] <= CHUNK_BYTES
                or area + cursor + span[1] > len(data)
            ):
                _fail(f"resource {entry.get('id')!r}: chunk {span!r} does not tile the chunk area")
            parts.append(data[area + cursor : area + cursor + span[1]])
            cursor += span[1]
        if entry.get("stored"):
            blob = b"".join(parts)
            if "sha256:" + hashlib.sha256(blob).hexdigest() != entry.get("id"):
                _fail(f"resource {entry.get('id')!r}: content does not match its id")
            blobs[str(entry["id"])] = blob
    if area + cursor != len(data):
        _fail(f"{len(data) - area - cursor} unaccounted bytes after the chunks")
    return DecodedAssets(manifest=manifest, blobs=blobs)


def decode_transforms(payload: bytes | memoryview) -> dict[str, NDArray[np.float64]]:
    """Body name -> 7-value world pose of one transforms record."""
    manifest, data, area = _split(payload)
    bodies = manifest.get("bodies")
    if manifest.get("kind") != "transforms" or not isinstance(bodies, list):
        _fail("not a transforms record")
    if len(data) - area != 56 * len(bodies):
        _fail("transforms payload does not match its bodies list")
    poses = np.frombuffer(data, "<f8", 7 * len(bodies), area).reshape(len(bodies), 7)
    return {str(name): poses[i] for i, name in enumerate(bodies)}
