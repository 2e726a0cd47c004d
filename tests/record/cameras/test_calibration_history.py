"""Rebuilding the generation-to-digest calibration history from camera records alone."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from fastsim_contract.calibration import calibration_digest
from fastsim_record.adapters.camera_records import CameraRecordEncoder
from fastsim_record.adapters.codecs import PngEncoder
from fastsim_record.ports.cameras import camera_stream_name
from fastsim_record.testing.cameras import camera_tick, profile_for
from fastsim_recording_format.reading.calibration_history import rebuild_calibration_history


class Kind(enum.Enum):
    """Record kinds as a reader reports them."""

    DATA = 0
    GAP = 1
    BARRIER = 2


@attrs.frozen
class Stream:
    """A stream table entry."""

    stream_id: int
    name: str


@attrs.frozen
class Rec:
    """A record as read back."""

    stream_id: int
    kind: Kind
    generation: int
    global_sequence: int
    sim_time_ns: int
    metadata: Mapping[str, Any]
    payload: bytes


ROLES = ("rgb", "intrinsics", "translation", "quaternion_xyzw")


def _recording(plan: list[tuple[int, int, float]]) -> tuple[list[Stream], list[Rec]]:
    """Records of camera 'wrist' for (generation, tick, fovy) steps."""
    streams = [Stream(i, camera_stream_name("wrist", r)) for i, r in enumerate(ROLES)]
    ids = {s.name: s.stream_id for s in streams}
    records: list[Rec] = []
    seq = 0
    for generation, tick, fovy in plan:
        enc = CameraRecordEncoder("wrist", PngEncoder(32, 24))
        for sample in camera_tick("wrist", tick=tick, width=32, height=24, fovy_deg=fovy):
            out = enc.encode(sample)
            seq += 1
            records.append(
                Rec(ids[out.stream], Kind.DATA, generation, seq, tick * 1000, out.metadata, out.payload)
            )
    return streams, records


def test_history_maps_each_generation_to_its_digest() -> None:
    """A reset that changes the field of view yields a new digest for the new generation only."""
    streams, records = _recording([(0, 1, 60.0), (0, 2, 60.0), (1, 3, 80.0), (1, 4, 80.0)])
    history = rebuild_calibration_history(streams, records)
    assert history.problems == ()
    assert history.cameras() == ("wrist",)
    want0 = calibration_digest(profile_for("wrist", 32, 24, 60.0))
    want1 = calibration_digest(profile_for("wrist", 32, 24, 80.0))
    assert history.digests("wrist") == {0: (want0,), 1: (want1,)}
    epoch = history.epoch("wrist", 1)
    assert epoch.intrinsics_records == 2
    assert epoch.profile["width"] == 32
    assert epoch.k[0][0] == profile_for("wrist", 32, 24, 80.0)["fx"]


def test_history_ignores_stream_attributes() -> None:
    """The rebuild reads only names, record metadata and payloads (streams carry no attributes here)."""
    streams, records = _recording([(0, 1, 60.0)])
    assert not any(hasattr(s, "attributes") for s in streams)
    assert len(rebuild_calibration_history(streams, records).epochs) == 1


def test_reference_without_declaring_intrinsics_is_reported() -> None:
    """An RGB record whose digest no intrinsics record declares in its generation is rule H3."""
    streams, records = _recording([(0, 1, 60.0)])
    intrinsics_id = next(s.stream_id for s in streams if s.name.endswith(".intrinsics"))
    history = rebuild_calibration_history(streams, [r for r in records if r.stream_id != intrinsics_id])
    assert history.epochs == ()
    assert any(p.startswith("H3:") for p in history.problems)


def test_tampered_profile_is_reported() -> None:
    """An intrinsics record whose profile no longer matches its digest is rule H1."""
    streams, records = _recording([(0, 1, 60.0)])
    bad = []
    for r in records:
        if "calibration_profile" in r.metadata:
            profile = dict(r.metadata["calibration_profile"])
            profile["fx"] = 1.0
            r = attrs.evolve(r, metadata={**r.metadata, "calibration_profile": profile})
        bad.append(r)
    history = rebuild_calibration_history(streams, bad)
    assert any(p.startswith("H1:") for p in history.problems)
