"""``fsr export --to rerun``: read back with ``rerun.chunk.RrdReader``; ``rerun rrd verify`` passes."""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fastsim_record as fr
from fastsim_record.cli import main

rr = pytest.importorskip("rerun", reason="the rerun extra (rerun-sdk) is not installed")


def _export(src: Path, out: Path) -> Path:
    assert main(["export", str(src), "--to", "rerun", "-o", str(out), "--quiet"]) == 0
    return out


def _rows(path: Path) -> tuple[Any, dict[str, int], dict[str, int], set[str]]:
    from rerun.chunk import RrdReader

    reader = RrdReader(str(path))
    temporal: dict[str, int] = collections.Counter()
    static: dict[str, int] = collections.Counter()
    timelines: set[str] = set()
    for chunk in reader.stream().to_chunks():
        (static if chunk.is_static else temporal)[chunk.entity_path] += chunk.num_rows
        timelines.update(chunk.timeline_names)
    return reader.recordings(), dict(temporal), dict(static), timelines


@pytest.fixture(scope="module")
def droid_rrd(droid_fsr: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DROID-like recording exported once to Rerun."""
    return _export(droid_fsr, tmp_path_factory.mktemp("rerun") / "droid.rrd")


def test_entity_paths_and_row_counts(droid_fsr: Path, droid_rrd: Path) -> None:
    """One image row per frame, transform and pinhole per calibration sample, one scalar row per tick, one text row per record."""
    rec = fr.open(droid_fsr)
    records = rec.info.records
    recordings, temporal, static, timelines = _rows(droid_rrd)
    assert [(r.application_id, r.recording_id) for r in recordings] == [("fsr", rec.info.run_id)]
    assert timelines == {"sim_time", "tick"}
    for cam in ("exterior_left", "exterior_right", "wrist"):
        assert temporal[f"/world/cameras/{cam}/image"] == records[f"cameras.{cam}.rgb"] == 30
        assert temporal[f"/world/cameras/{cam}"] == 2 * records[f"cameras.{cam}.intrinsics"]
        assert static[f"/world/cameras/{cam}"] == 1  # camera_xyz RDF
    assert temporal["/numeric/robot.joint_position"] == records["observations"]
    assert static["/numeric/robot.joint_position"] == 1  # the series names
    assert temporal["/control"] == records["control.audit"] + records["control.result"]
    assert temporal["/lifecycle"] == records["lifecycle"]
    assert temporal["/events"] == records["events"]


def test_images_are_the_recorded_bytes_and_scalars_have_names(droid_fsr: Path, droid_rrd: Path) -> None:
    """EncodedImage blobs are the recorded JPEG bytes; the joint series carry the channel's element names."""
    from rerun.chunk import RrdReader

    from fastsim_record.export._source import encoded_frames

    rec = fr.open(droid_fsr)
    recorded = [f.data for f in encoded_frames(rec, "wrist")]
    blobs: list[bytes] = []
    names: list[str] = []
    for chunk in RrdReader(str(droid_rrd)).stream().to_chunks():
        batch = chunk.to_record_batch()
        for col in batch.schema.names:
            if chunk.entity_path == "/world/cameras/wrist/image" and col.endswith("blob"):
                blobs += [bytes(b[0]) for b in batch.column(col).to_pylist()]
            if chunk.entity_path == "/numeric/robot.joint_position" and col.endswith("names"):
                names += [n for row in batch.column(col).to_pylist() for n in (row or [])]
    assert blobs == recorded
    assert names == list(rec.numeric("robot.joint_position").names)


def test_geometry_becomes_meshes_and_body_transforms(geometry_fsr: Path, tmp_path: Path) -> None:
    """The recorded mesh is a static Mesh3D; each body has one Transform3D row per pose recorded for it."""
    out = _export(geometry_fsr, tmp_path / "geo.rrd")
    _, temporal, static, _ = _rows(out)
    transforms = fr.open(geometry_fsr).info.records["geometry"] - 1  # all but the assets record
    assert temporal["/world/bodies/robot"] == transforms + 1  # and the assets record's pose
    assert "/world/bodies/robot/robot.marker" in static


def test_rerun_rrd_verify_exits_0(droid_rrd: Path, tmp_path: Path) -> None:
    """The rerun CLI's `rrd verify` accepts the exported file."""
    cli = Path(sys.executable).parent / "rerun"
    if not cli.exists():
        pytest.skip("the rerun command is not installed next to this Python")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(cli), "rrd", "verify", str(droid_rrd)], capture_output=True, text=True,
                          env=env, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "verified without error" in done.stdout + done.stderr


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fault", ["stop right after save", "the sink is never disconnected"])
def test_an_interrupted_export_never_waits_for_a_sink_left_open(
    droid_fsr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """A stop signal between save and the writing, or a sink the SDK never closes: the export ends, no output."""
    from fastsim_record.export import to_rerun
    from fastsim_record.export._port import NoProgress

    save, disconnect = rr.RecordingStream.save, rr.RecordingStream.disconnect
    kept: list[Any] = []

    def save_then_stop(self: Any, path: str) -> None:
        save(self, path)
        raise KeyboardInterrupt  # what fsr's stop handler raises, landing just after save

    def stop_writing(*args: object) -> None:
        raise KeyboardInterrupt

    if fault == "stop right after save":
        monkeypatch.setattr(rr.RecordingStream, "save", save_then_stop)
    else:
        monkeypatch.setattr(to_rerun, "_write_all", stop_writing)
        monkeypatch.setattr(rr.RecordingStream, "disconnect", lambda self: kept.append(self))  # never closed
    out = tmp_path / "out.rrd"
    with pytest.raises(KeyboardInterrupt):
        to_rerun.write_rrd(fr.open(droid_fsr), out, NoProgress())
    for stream in kept:  # the test's own clean-up: now the SDK may close its sink
        disconnect(stream)
