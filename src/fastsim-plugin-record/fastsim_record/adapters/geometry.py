"""``geometry`` envelopes -> ``scene.geometry@2`` records (the plugin side of the codec).

Core's :class:`~fastsim_contract.render_services.GeometryAssets` and
:class:`~fastsim_contract.render_services.GeometryTransforms` envelopes become plain
bodies, items and mesh blobs here; the bytes are laid out by the format's codec,
:mod:`fastsim_recording_format.codecs.geometry` (its module header has the encoding
rules 1-5 and the record layout).  This adapter checks the contract-level rules: the
preferred catalog (rule 1), known motions and shapes, and skips particle items (rule 2).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import NoReturn

import attrs

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
from fastsim_recording_format.codecs import geometry as fmt
from fastsim_recording_format.codecs.geometry import (
    CHUNK_BYTES,
    SCHEMA,
    STREAM_CODEC,
    STREAM_NAME,
    DecodedAssets,
    decode_assets,
    decode_transforms,
    record_kind,
)

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


class GeometryPayloadError(fmt.GeometryPayloadError, RecordError):
    """The format's geometry payload error, raised on the capture side (a ``RecordError``)."""


@contextmanager
def _as_record_error() -> Iterator[None]:
    try:
        yield
    except fmt.GeometryPayloadError as exc:
        if isinstance(exc, RecordError):
            raise
        raise GeometryPayloadError(exc.reason, **exc.fields) from None


def _fail(message: str) -> NoReturn:
    raise GeometryPayloadError(f"scene.geometry: {message}")


def resource_blob(resource: MeshResource) -> tuple[str, bytes]:
    """The canonical blob of a contract mesh resource and its content id (rule 3)."""
    with _as_record_error():
        return fmt.resource_blob(resource.resource_id, resource.vertices, resource.faces)


@attrs.define(eq=False)
class GeometryEncoder:
    """Encodes ``geometry`` envelopes into ``scene.geometry`` records (worker only)."""

    _store: fmt.AssetStore = attrs.field(factory=fmt.AssetStore, init=False)

    codec: Mapping[str, object] = STREAM_CODEC
    last_metadata: dict[str, object] = attrs.field(factory=dict, init=False)

    def encode(self, payload: object) -> bytes:
        """One envelope payload -> the record payload (``last_metadata`` describes it)."""
        value = payload
        if isinstance(payload, Mapping) and len(payload) == 1:
            value = next(iter(payload.values()))
        with _as_record_error():
            if isinstance(value, GeometryAssets):
                data, self.last_metadata = self._assets(value)
            elif isinstance(value, GeometryTransforms):
                data, self.last_metadata = self._store.transforms(tuple(value.bodies), value.poses)
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
            items.append({
                "name": item.name,
                "body": item.body,
                "shape": item.shape,
                "size": fmt.finite_floats(item.size, len(tuple(item.size)), f"item {item.name!r} size"),
                "local_pose": fmt.finite_floats(item.local_pose, 7, f"item {item.name!r} local_pose"),
                "resource": content,
            })
        ordered = [bodies[name] for name in sorted(bodies)]
        return self._store.assets(catalog.kind, ordered, items, blobs.values())


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
            "pose": fmt.finite_floats(body.pose, 7, f"body {body.name!r} pose"),
        }
    return bodies
