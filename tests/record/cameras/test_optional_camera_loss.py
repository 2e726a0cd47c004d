"""Optional camera loss is a gap, not a failure (issue 27; calibration rule C8).

The fixture `tests/fixtures/runs/optcam.yaml` is the Run of the issue: one optional camera, a
media lane of two items under `drop_newest`. Each tick publishes four camera samples, so the
lane loses some of them. It used to pass `fsr check` and then fail with `calibration rule C4:
camera 'cam' rgb forward-referenced calibration digest ...` when an intrinsics sample was lost.
Now every lost sample is a GAP in its stream, the frames that referenced a lost declaration
are kept and marked in the terminal fence (`calibration_lost`), and the file commits degraded.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import yaml

import fastsim_record
from fastsim_record.cli import main
from fastsim_recording_format.model import RecordKind
from fastsim_recording_format.reader import FsrReader

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "optcam.yaml"
ROLES = ("rgb", "intrinsics", "extrinsics.translation", "extrinsics.quaternion_xyzw")
TICKS = 240  # 2 s at the default 120 Hz


def _record(run: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["record", str(run), "--no-progress", "--duration", "2", "--output-dir", str(out)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_optcam_fixture_commits_degraded_and_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lost camera samples are gaps in their own streams; the file commits, validates and reads."""
    run = tmp_path / "optcam.yaml"
    shutil.copy(FIXTURE, run)
    code, text = _record(run, tmp_path / "out", capsys)
    assert code == 0, text
    path = tmp_path / "out" / "optcam.fsr"
    assert main(["validate", str(path)]) == 0
    assert "valid: " in capsys.readouterr().out
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out.splitlines()[0])
    assert info["degraded"] is True
    streams = {s["name"]: s for s in info["streams"]}
    for role in ROLES:  # every tick of every camera stream is a DATA record or covered by a GAP
        s = streams[f"cameras.cam.{role}"]
        assert s["data"] + s["lost"] == TICKS, role
    assert sum(s["lost"] for s in streams.values()) > 0

    reader = FsrReader(io.BytesIO(path.read_bytes()))
    names = {s.stream_id: s.name.removeprefix("cameras.cam.") for s in reader.streams}
    kept: dict[str, dict[int, str]] = {role: {} for role in ROLES}
    for r in reader.records():
        role = names[r.stream_id]
        if role in kept and r.kind is RecordKind.DATA:
            kept[role][int(r.metadata["tick"])] = str(r.metadata["calibration_digest"])
    declared = sorted(kept["intrinsics"])
    first_declared = declared[0] if declared else TICKS + 1
    # the ticks that forward-referenced a digest whose declaring intrinsics sample was lost
    undeclared = [
        t for t in range(1, first_declared)
        if t not in kept["intrinsics"] and any(t in kept[r] for r in ROLES if r != "intrinsics")
    ]
    fence = reader.footer["terminal_fence"]
    marks = fence.get("calibration_lost", [])
    assert sum(m["ticks"] for m in marks) == len(undeclared)
    assert fence.get("calibration_lost_count", 0) == len(marks)
    for mark in marks:
        assert (mark["camera"], mark["generation"], mark["epoch"]) == ("cam", 0, None)
        assert mark["first_tick"] == undeclared[0]

    with fastsim_record.open(path) as rec:
        calibration = rec.calibration("cam")
        complete = set(kept["intrinsics"]) & set(kept["extrinsics.translation"]) & set(
            kept["extrinsics.quaternion_xyzw"])
        assert len(calibration.digest) == calibration.k.shape[0] == len(complete)
        assert calibration.problems == ()
        assert [(m.digest, m.epoch, m.ticks) for m in calibration.lost] == [
            (m["digest"], m["epoch"], m["ticks"]) for m in marks
        ]
        if kept["rgb"]:
            assert rec.frame("cam", 0).image.shape == (480, 640, 3)


def test_a_required_camera_still_fails_closed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same camera marked required: a lossy lane is refused by fsr check; a full fail_run lane fails the Run."""
    run = yaml.safe_load(FIXTURE.read_text())
    config = run["plugins"]["record"]["config"]
    config["streams"]["cameras"]["cam"]["required"] = True
    lossy = tmp_path / "lossy.yaml"
    lossy.write_text(yaml.safe_dump(run))
    assert main(["check", str(lossy)]) == 2
    assert "must be 'fail_run' because the media lane carries required stream" in capsys.readouterr().err

    config["queues"]["media"] = {"max_items": 1, "max_bytes": 536870912, "overload": "fail_run"}
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump(run))
    code, text = _record(strict, tmp_path / "out", capsys)
    assert code == 1
    assert "media lane overflow under fail_run" in text
    assert not (tmp_path / "out" / "optcam.fsr").exists()
