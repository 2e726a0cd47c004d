"""``fsr export --to mcap``: read back with the ``mcap`` reader and the protobuf decoder."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_record.cli import main
from fastsim_record.export._source import encoded_frames, generation_offsets
from fastsim_recording_format import FsrReader

pytest.importorskip("foxglove", reason="the mcap extra (foxglove-sdk) is not installed")
mcap_reader = pytest.importorskip("mcap.reader")
decoder = pytest.importorskip("mcap_protobuf.decoder", reason="mcap-protobuf-support is not installed")


@pytest.fixture(scope="module")
def droid_mcap(droid_fsr: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DROID-like recording exported once to MCAP."""
    out = tmp_path_factory.mktemp("mcap") / "droid.mcap"
    assert main(["export", str(droid_fsr), "--to", "mcap", "-o", str(out), "--quiet"]) == 0
    return out


def _reader(path: Path) -> Any:
    return mcap_reader.make_reader(
        path.open("rb"), validate_crcs=True, decoder_factories=[decoder.DecoderFactory()]
    )


def _counts(path: Path) -> dict[str, int]:
    summary = _reader(path).get_summary()
    return {summary.channels[c].topic: n for c, n in summary.statistics.channel_message_counts.items()}


def test_message_counts_equal_the_fsr_record_counts(droid_fsr: Path, droid_mcap: Path) -> None:
    """Every topic holds exactly one message per DATA record of the FSR stream it comes from."""
    records = fr.open(droid_fsr).info.records
    counts = _counts(droid_mcap)
    for cam in ("exterior_left", "exterior_right", "wrist"):
        assert counts[f"/camera/{cam}/image"] == records[f"cameras.{cam}.rgb"] == 30
        assert counts[f"/camera/{cam}/calibration"] == records[f"cameras.{cam}.intrinsics"]
        assert counts[f"/camera/{cam}/tf"] == records[f"cameras.{cam}.extrinsics.translation"]
    assert counts["/numeric/robot.joint_position"] == records["observations"]
    assert counts["/numeric/robot.joint_velocity"] == records["observations"]
    assert counts["/lifecycle"] == records["lifecycle"]
    assert counts["/events"] == records["events"]
    assert counts["/control/audit"] == records["control.audit"]
    assert counts["/control/result"] == records["control.result"]


def test_image_bytes_are_the_recorded_bytes(droid_fsr: Path, droid_mcap: Path) -> None:
    """CompressedImage data is byte-identical to the recorded JPEG, in order, with format and frame."""
    rec = fr.open(droid_fsr)
    recorded = [f.data for f in encoded_frames(rec, "wrist")]
    got = [
        (msg.data, msg.format, msg.frame_id)
        for _, _, _, msg in _reader(droid_mcap).iter_decoded_messages(topics=["/camera/wrist/image"])
    ]
    assert [g[0] for g in got] == recorded
    assert {g[1] for g in got} == {"jpeg"}
    assert {g[2] for g in got} == {"wrist_optical"}


def test_calibration_and_transforms_equal_the_recorded_k_and_pose(droid_fsr: Path, droid_mcap: Path) -> None:
    """CameraCalibration K and P = [K | 0], size, and the world-to-optical transform equal the recording."""
    cal = fr.open(droid_fsr).calibration("exterior_left")
    reader = _reader(droid_mcap)
    cals = [m for _, _, _, m in reader.iter_decoded_messages(topics=["/camera/exterior_left/calibration"])]
    tfs = [m for _, _, _, m in _reader(droid_mcap).iter_decoded_messages(topics=["/camera/exterior_left/tf"])]
    assert len(cals) == len(tfs) == len(cal.time_ns)
    for i, (c, tf) in enumerate(zip(cals, tfs)):
        np.testing.assert_array_equal(np.asarray(c.K).reshape(3, 3), cal.k[i])
        p = np.asarray(c.P).reshape(3, 4)
        np.testing.assert_array_equal(p[:, :3], cal.k[i])
        np.testing.assert_array_equal(p[:, 3], 0.0)
        assert (c.width, c.height, c.frame_id) == (320, 240, "exterior_left_optical")
        (t,) = tf.transforms
        assert (t.parent_frame_id, t.child_frame_id) == ("world", "exterior_left_optical")
        got_t = [t.translation.x, t.translation.y, t.translation.z]
        got_q = [t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w]
        np.testing.assert_array_equal(got_t, cal.translation[i])
        np.testing.assert_array_equal(got_q, cal.quaternion_xyzw[i])


def test_log_time_is_sim_time_and_never_goes_backward(droid_fsr: Path, droid_mcap: Path) -> None:
    """log_time is simulation time plus the generation offset, and is non-decreasing in log-time order per topic."""
    rec = fr.open(droid_fsr)
    offsets = generation_offsets(rec)
    q = rec.numeric("robot.joint_position")
    expected = (q.time_ns + np.array([offsets[int(g)] for g in q.generation])).tolist()
    got, gens = [], []
    for _, _, msg in _reader(droid_mcap).iter_messages(topics=["/numeric/robot.joint_position"]):
        got.append(msg.log_time)
        gens.append(json.loads(msg.data)["generation"])
    assert got == expected
    assert gens == q.generation.tolist()
    assert all(b >= a for a, b in itertools.pairwise(got))


def test_joint_channel_carries_names_and_values(droid_fsr: Path, droid_mcap: Path) -> None:
    """A numeric topic is a JSON-schema channel whose messages carry the element names and the exact values."""
    q = fr.open(droid_fsr).numeric("robot.joint_velocity")
    reader = _reader(droid_mcap)
    rows = [(s, json.loads(m.data)) for s, _, m in reader.iter_messages(topics=["/numeric/robot.joint_velocity"])]
    assert rows[0][0].encoding == "jsonschema"
    assert rows[0][1]["names"] == list(q.names)
    np.testing.assert_array_equal([r["values"] for _, r in rows], q.values)


def test_run_metadata_and_validation_receipt_are_metadata_records(droid_fsr: Path, droid_mcap: Path) -> None:
    """The Run's facts and the FSR validation receipt are MCAP metadata records."""
    meta = {m.name: m.metadata for m in _reader(droid_mcap).iter_metadata()}
    info = fr.open(droid_fsr).info
    assert meta["fsr.run"]["run_id"] == info.run_id
    assert meta["fsr.run"]["name"] == "droid-like-pick"
    assert json.loads(meta["fsr.run"]["generations"]) == [0, 1]
    with FsrReader(droid_fsr) as reader:  # every payload CRC-32C checked when the file has them, else structural
        assert meta["fsr.validation"]["profile"] == ("crc" if reader.payload_crc else "structural")
    assert meta["fsr.validation"]["completion_identity"]


def test_geometry_becomes_scene_update_and_body_transforms(geometry_fsr: Path, tmp_path: Path) -> None:
    """Geometry assets become one SceneUpdate with the recorded mesh; transforms become /tf/bodies."""
    out = tmp_path / "geo.mcap"
    assert main(["export", str(geometry_fsr), "--to", "mcap", "-o", str(out), "--quiet"]) == 0
    counts = _counts(out)
    geometry = fr.open(geometry_fsr).info.records["geometry"]
    assert counts["/scene"] == 1
    assert counts["/tf/bodies"] == geometry  # one per transforms record, plus the assets record's poses
    (scene,) = [m for _, _, _, m in _reader(out).iter_decoded_messages(topics=["/scene"])]
    meshes = [e for e in scene.entities if e.triangles]
    assert meshes
    assert len(meshes[0].triangles[0].indices) == 12
    assert counts["/numeric/robot.base_pose"] == fr.open(geometry_fsr).info.records["observations"]


class _Counting:
    """A Progress that remembers its total and what was reported."""

    def __init__(self) -> None:
        self.declared = -1
        self.done = 0

    def total(self, records: int) -> None:
        """Remember the total."""
        self.declared = records

    def advance(self, records: int) -> None:
        """Add up progress."""
        self.done += records


def test_progress_reaches_its_declared_total(droid_fsr: Path, tmp_path: Path) -> None:
    """The progress an exporter reports adds up exactly to the total it declared (the bar ends full)."""
    from fastsim_record.export import ExportOptions, exporter

    for target in ("mcap", "rerun"):
        pytest.importorskip({"mcap": "foxglove", "rerun": "rerun"}[target])
        progress = _Counting()
        exporter(target).export([droid_fsr], tmp_path / target, ExportOptions(), progress)
        assert progress.declared == progress.done == sum(fr.open(droid_fsr).info.records.values())
