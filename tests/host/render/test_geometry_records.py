"""scene.geometry@2 records: catalog choice, dedup, bounded chunks, static-once transforms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from fastsim_contract.render_services import (
    GeometryAssets,
    GeometryBody,
    GeometryCatalog,
    GeometryItem,
    GeometryTransforms,
    MeshResource,
    select_catalog,
)
from fastsim_record.adapters.geometry import GeometryEncoder
from fastsim_recording_format.codecs.geometry import (
    CHUNK_BYTES,
    GeometryPayloadError,
    decode_assets,
    decode_transforms,
    record_kind,
)

_IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def _ro(array: NDArray[Any]) -> NDArray[Any]:
    array.setflags(write=False)
    return array


def _mesh(rid: str, n: int = 4, seed: int = 0) -> MeshResource:
    rng = np.random.default_rng(seed)
    vertices = _ro(rng.standard_normal((n, 3)).astype(np.float32))
    faces = _ro(np.array([[0, 1, 2]] * max(1, n // 3), dtype=np.uint32))
    return MeshResource(rid, vertices, faces)


def _enc(encoder: GeometryEncoder, value: object) -> tuple[bytes, dict[str, object]]:
    key = "assets" if isinstance(value, GeometryAssets) else "transforms"
    payload = encoder.encode({key: value})
    return payload, encoder.last_metadata


def _assets(kind: str = "visual", available: frozenset[str] | None = None) -> GeometryAssets:
    bodies = (
        GeometryBody("table", "static", _IDENTITY),
        GeometryBody("arm", "kinematic", _IDENTITY),
        GeometryBody("cube", "dynamic", _IDENTITY),
    )
    items = (
        GeometryItem("top", "table", "box", (0.5, 0.5, 0.02), _IDENTITY, material={"rgba": [1, 0, 0, 1]}),
        GeometryItem("link", "arm", "mesh", (), _IDENTITY, resource="link_a"),
        GeometryItem("link2", "arm", "mesh", (), _IDENTITY, resource="link_b"),
        GeometryItem("cube", "cube", "box", (0.02, 0.02, 0.02), _IDENTITY),
        GeometryItem("water", "table", "sphere", (0.01,), _IDENTITY, particles=True),
    )
    # link_a and link_b have identical content: stored once
    resources = (_mesh("link_a"), _mesh("link_b"))
    return GeometryAssets(available or frozenset({kind}), GeometryCatalog(kind, bodies, items), resources)


def test_visual_is_preferred_over_collision_and_planning() -> None:
    """select_catalog prefers visual, then collision, then planning."""
    assert select_catalog({"collision", "visual", "planning"}) == "visual"  # type: ignore[arg-type]
    assert select_catalog(frozenset({"planning", "collision"})) == "collision"
    assert select_catalog(frozenset({"planning"})) == "planning"
    assert select_catalog(frozenset()) is None


def test_collision_catalog_is_refused_when_visual_exists() -> None:
    """Capturing collision geometry while a visual catalog exists is an error."""
    assets = _assets("collision", frozenset({"visual", "collision"}))
    with pytest.raises(GeometryPayloadError, match="'visual' is preferred"):
        _enc(GeometryEncoder(), assets)


def test_collision_catalog_is_used_without_visual() -> None:
    """Without a visual catalog the collision catalog is recorded."""
    payload, meta = _enc(GeometryEncoder(), _assets("collision"))
    assert meta["catalog"] == "collision"
    assert decode_assets(payload).manifest["catalog"] == "collision"


def test_materials_and_particles_are_excluded() -> None:
    """No material key and no particle item reaches the record."""
    payload, _ = _enc(GeometryEncoder(), _assets())
    decoded = decode_assets(payload)
    assert b"rgba" not in payload
    assert b"material" not in payload
    assert [i["name"] for i in decoded.manifest["items"]] == ["top", "link", "link2", "cube"]


def test_identical_meshes_are_stored_once_and_round_trip() -> None:
    """Two resources with equal content share one id and one stored blob."""
    payload, meta = _enc(GeometryEncoder(), _assets())
    decoded = decode_assets(payload)
    ids = {i["resource"] for i in decoded.manifest["items"] if i["shape"] == "mesh"}
    assert len(ids) == 1
    assert meta["resources_stored"] == 1
    vertices, faces = decoded.mesh(ids.pop())
    original = _mesh("x")
    assert vertices.tobytes() == np.asarray(original.vertices).tobytes()
    assert faces.tobytes() == np.asarray(original.faces).tobytes()


def test_a_second_assets_record_references_without_restoring() -> None:
    """Resources already in the file are referenced, not stored again."""
    encoder = GeometryEncoder()
    _enc(encoder, _assets())
    payload, meta = _enc(encoder, _assets())
    assert meta["resources_stored"] == 0
    assert meta["resources_reused"] == 1
    assert decode_assets(payload).blobs == {}


def test_large_meshes_are_split_into_bounded_chunks() -> None:
    """A mesh bigger than CHUNK_BYTES is split into chunks of at most CHUNK_BYTES."""
    big = _mesh("link_a", n=200_000, seed=3)
    base = _assets()
    assets = GeometryAssets(base.available, base.catalog, (big, _mesh("link_b")))
    payload, meta = _enc(GeometryEncoder(), assets)
    decoded = decode_assets(payload)
    spans = [s for r in decoded.manifest["resources"] for s in r["chunks"]]
    assert len(spans) >= 3
    assert meta["chunks"] == len(spans)
    assert all(length <= CHUNK_BYTES for _, length in spans)
    content = next(i["resource"] for i in decoded.manifest["items"] if i["name"] == "link")
    assert decoded.mesh(content)[0].tobytes() == np.asarray(big.vertices).tobytes()


def test_static_bodies_are_posed_once_not_per_frame() -> None:
    """Transform records accept only dynamic/kinematic bodies and round-trip exactly."""
    encoder = GeometryEncoder()
    with pytest.raises(GeometryPayloadError, match="before the assets record"):
        encoder.encode(GeometryTransforms(("arm",), _ro(np.zeros((1, 7)))))
    _enc(encoder, _assets())
    poses = _ro(np.arange(14, dtype=np.float64).reshape(2, 7))
    payload, meta = _enc(encoder, GeometryTransforms(("arm", "cube"), poses))
    assert record_kind(payload) == "transforms"
    assert meta["bodies"] == 2
    assert decode_transforms(payload)["cube"].tolist() == list(range(7, 14))
    with pytest.raises(GeometryPayloadError, match="static or unknown bodies"):
        encoder.encode(GeometryTransforms(("table",), _ro(np.zeros((1, 7)))))


def test_tampered_chunks_are_rejected() -> None:
    """A chunk whose bytes no longer hash to its id is refused by the decoder."""
    payload = bytearray(_enc(GeometryEncoder(), _assets())[0])
    payload[-1] ^= 0xFF
    with pytest.raises(GeometryPayloadError, match="does not match its id"):
        decode_assets(bytes(payload))
    with pytest.raises(GeometryPayloadError):
        decode_assets(bytes(payload[:-5]))
