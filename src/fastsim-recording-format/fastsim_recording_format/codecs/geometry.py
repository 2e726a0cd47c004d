"""``scene.geometry@2`` records for the FSR Viewer: deduplicated, chunked, static once.

Byte level only (manifests, chunking, bounded decoding); the plugin's
``fastsim_record.adapters.geometry`` turns Core's envelopes into the plain bodies, items
and meshes encoded here.

Core publishes one :class:`~fastsim_contract.render_services.GeometryAssets` envelope
and then :class:`~fastsim_contract.render_services.GeometryTransforms` envelopes at
``streams.geometry.rate_hz``.  The writer worker turns each into one record of the
``geometry`` stream (kind ``scene.geometry@2``) with a stateful encoder that remembers
which resources the file already stores (:class:`AssetStore`).

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
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs
import numpy as np
from numpy.typing import NDArray

from fastsim_recording_format.codecs import _common
from fastsim_recording_format.codecs._common import failing
from fastsim_recording_format.encoding import canonical_json, pad8
from fastsim_recording_format.errors import GeometryPayloadError

__all__ = [
    "CHUNK_BYTES",
    "MAX_MANIFEST_BYTES",
    "SCHEMA",
    "STREAM_CODEC",
    "STREAM_NAME",
    "AssetStore",
    "DecodedAssets",
    "GeometryPayloadError",
    "decode_assets",
    "decode_transforms",
    "encode_transforms",
    "finite_floats",
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


#: raise one :class:`GeometryPayloadError` line
fail = failing(GeometryPayloadError, "scene.geometry")


def finite_floats(values: object, n: int, what: str) -> list[float]:
    """``values`` as ``n`` finite floats, else one error line naming ``what``."""
    try:
        return _common.finite_floats(values, n)
    except ValueError as exc:
        fail(f"{what}: expected {exc}" + (f", got {values!r}" if "finite" in str(exc) else ""))


def resource_blob(name: str, vertices: object, faces: object) -> tuple[str, bytes]:
    """The canonical blob of a mesh (``name`` is its resource id) and its content id (rule 3)."""
    v = np.asarray(vertices)
    f = np.asarray(faces)
    if v.ndim != 2 or v.shape[1] != 3 or v.dtype.kind != "f":
        fail(f"resource {name!r}: vertices must be float (V, 3)")
    if f.ndim != 2 or f.shape[1] != 3 or f.dtype.kind not in "iu":
        fail(f"resource {name!r}: faces must be integer (F, 3)")
    if f.size and (f.min() < 0 or f.max() >= v.shape[0]):
        fail(f"resource {name!r}: a face indexes a missing vertex")
    blob = b"".join(
        (
            _COUNTS.pack(v.shape[0], f.shape[0]),
            np.ascontiguousarray(v, dtype="<f4").tobytes(),
            np.ascontiguousarray(f, dtype="<u4").tobytes(),
        )
    )
    return "sha256:" + hashlib.sha256(blob).hexdigest(), blob


def _head(manifest: bytes) -> bytes:
    head = _U32.pack(len(manifest)) + manifest
    return head + bytes(pad8(len(head)) - len(head))


@attrs.define(eq=False)
class AssetStore:
    """The resources one file already stores: each content id is written once (rules 3-5)."""

    _stored: set[str] = attrs.field(factory=set, init=False)
    moving: frozenset[str] | None = attrs.field(default=None, init=False)

    def assets(
        self,
        catalog: str,
        bodies: Sequence[Mapping[str, object]],
        items: Sequence[Mapping[str, object]],
        blobs: Iterable[tuple[str, bytes]],
    ) -> tuple[bytes, dict[str, object]]:
        """One assets record from plain bodies (name, motion, pose), items and mesh blobs."""
        resources: list[dict[str, object]] = []
        chunks: list[bytes] = []
        cursor = new = reused = 0
        for content, blob in sorted(dict(blobs).items()):
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
        manifest = canonical_json(
            {"kind": "assets", "schema": SCHEMA, "catalog": catalog, "bodies": list(bodies),
             "items": list(items), "resources": resources}
        )
        payload = b"".join((_head(manifest), *chunks))
        self._stored.update(str(r["id"]) for r in resources if r["stored"])
        self.moving = frozenset(str(b["name"]) for b in bodies if b["motion"] != "static")
        meta: dict[str, object] = {
            "kind": "assets", "schema": SCHEMA, "catalog": catalog,
            "resources_stored": new, "resources_reused": reused, "chunks": len(chunks),
        }
        return payload, meta

    def transforms(self, names: Sequence[str], poses: object) -> tuple[bytes, dict[str, object]]:
        """One transforms record: only dynamic and kinematic bodies, after the assets (rule 5)."""
        if self.moving is None:
            fail("a transforms sample arrived before the assets record (rule 5)")
        static = [n for n in names if n not in self.moving]
        if static:
            fail(f"transforms for static or unknown bodies {static} (rule 5)")
        return encode_transforms(names, poses), {"kind": "transforms", "bodies": len(names)}


def encode_transforms(names: Sequence[str], poses: object) -> bytes:
    """A transforms payload: the body names, then ``N * 7`` little-endian float64 poses."""
    array = np.asarray(poses)
    if array.shape != (len(names), 7) or array.dtype.kind != "f":
        fail(f"transforms: expected float ({len(names)}, 7) poses, got {array.shape}")
    manifest = canonical_json({"kind": "transforms", "schema": SCHEMA, "bodies": list(names)})
    return _head(manifest) + np.ascontiguousarray(array, dtype="<f8").tobytes()


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
        fail("payload is shorter than its manifest length")
    (length,) = _U32.unpack_from(data)
    if length > MAX_MANIFEST_BYTES or 4 + length > len(data):
        fail(f"manifest length {length} does not fit the {len(data)}-byte payload")
    raw = data[4 : 4 + length]
    if raw.count(b"{") + raw.count(b"[") > length // 8 + 4:
        fail("manifest nests more objects and arrays than its entries can hold")
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        fail(f"manifest is not JSON: {exc}")
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        fail(f"manifest schema must be {SCHEMA!r}")
    return manifest, data, pad8(4 + length)


def record_kind(payload: bytes | memoryview) -> str:
    """``assets`` or ``transforms``."""
    return str(_split(payload)[0].get("kind"))


def decode_assets(payload: bytes | memoryview) -> DecodedAssets:
    """Decode an assets payload; offsets are checked before any slice is taken."""
    manifest, data, area = _split(payload)
    if manifest.get("kind") != "assets":
        fail("not an assets record")
    cursor = 0
    blobs: dict[str, bytes] = {}
    for entry in manifest.get("resources", []):
        if not isinstance(entry, dict) or not isinstance(entry.get("chunks"), list):
            fail("a resource entry must be an object with chunks")
        parts = []
        for span in entry["chunks"]:
            if (
                not isinstance(span, list) or len(span) != 2 or span[0] != cursor
                or not isinstance(span[1], int) or not 0 < span[1] <= CHUNK_BYTES
                or area + cursor + span[1] > len(data)
            ):
                fail(f"resource {entry.get('id')!r}: chunk {span!r} does not tile the chunk area")
            parts.append(data[area + cursor : area + cursor + span[1]])
            cursor += span[1]
        if entry.get("stored"):
            blob = b"".join(parts)
            if "sha256:" + hashlib.sha256(blob).hexdigest() != entry.get("id"):
                fail(f"resource {entry.get('id')!r}: content does not match its id")
            blobs[str(entry["id"])] = blob
    if area + cursor != len(data):
        fail(f"{len(data) - area - cursor} unaccounted bytes after the chunks")
    return DecodedAssets(manifest=manifest, blobs=blobs)


def decode_transforms(payload: bytes | memoryview) -> dict[str, NDArray[np.float64]]:
    """Body name -> 7-value world pose of one transforms record."""
    manifest, data, area = _split(payload)
    bodies = manifest.get("bodies")
    if manifest.get("kind") != "transforms" or not isinstance(bodies, list):
        fail("not a transforms record")
    if len(data) - area != 56 * len(bodies):
        fail("transforms payload does not match its bodies list")
    poses = np.frombuffer(data, "<f8", 7 * len(bodies), area).reshape(len(bodies), 7)
    return {str(name): poses[i] for i, name in enumerate(bodies)}
