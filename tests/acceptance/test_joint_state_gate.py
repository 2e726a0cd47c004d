"""The DROID joint-state gate on a real short MuJoCo recording and on doctored copies."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import numpy as np
import pytest
import yaml

from fastsim_record.cli import main as fsr_main
from fastsim_recording_format import FsrReader, FsrWriter, RecordIn, RecordKind, StreamSpec

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "acceptance" / "configs" / "record-droid-joint-state-explicit.yaml"
GATE = ROOT / "acceptance" / "validate_record_joint_state.py"

pytestmark = pytest.mark.mujoco


def _gate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("validate_record_joint_state", GATE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A committed short MuJoCo recording of the gate's own config."""
    out = tmp_path_factory.mktemp("joint-state")
    assert fsr_main(["record", str(CONFIG), "--output-dir", str(out), "--duration", "1.0"]) == 0
    return out / "joint-state.fsr"


def _run(fsr: Path, tmp_path: Path, config: Path = CONFIG) -> tuple[int, dict[str, Any]]:
    report = tmp_path / "report.json"
    code = _gate().main(["--config", str(config), "--fsr", str(fsr), "--report", str(report)])
    data = json.loads(report.read_text()) if report.exists() else {}
    return int(code), data


def _doctor(
    src: Path,
    dst: Path,
    *,
    record: Callable[[RecordIn], RecordIn] | None = None,
    stream: Callable[[StreamSpec], StreamSpec] | None = None,
) -> Path:
    """Rewrite a sealed file with doctored observation records or stream declarations."""
    with FsrReader(src) as reader:
        obs_id = reader.stream("observations").stream_id
        streams = [
            stream(s) if stream is not None and s.stream_id == obs_id else s for s in reader.streams
        ]
        records = []
        for r in reader.records():
            rin = r.as_record_in()
            if record is not None and r.stream_id == obs_id and r.kind is RecordKind.DATA:
                rin = record(rin)
            records.append(rin)
        with FsrWriter(dst, reader.run, streams) as writer:
            for start in range(0, len(records), 128):
                writer.write_batch(records[start : start + 128])
            writer.seal(degraded=any(r.kind is RecordKind.GAP for r in records))
    return dst


def test_gate_passes_on_a_real_recording(recording: Path, tmp_path: Path) -> None:
    """Both joint channels have real records whose every sample meets the locked contract."""
    code, report = _run(recording, tmp_path)
    assert code == 0, report.get("failures")
    assert report["passed"] is True
    for channel in ("robot.joint_position", "robot.joint_velocity"):
        assert report["evidence"][channel]["records"] > 0
        assert report["evidence"][channel]["declared"]["shape"] == [13]


@pytest.mark.parametrize("script", ["validate_record_joint_state.py", "scripts/validate_record_joint_state.py"])
def test_gate_runs_as_a_script_from_both_documented_paths(recording: Path, tmp_path: Path, script: str) -> None:
    """``python acceptance/[scripts/]validate_record_joint_state.py`` exits 0 and writes a passing report."""
    report = tmp_path / "report.json"
    argv = ["--config", str(CONFIG), "--fsr", str(recording), "--report", str(report)]
    done = subprocess.run(
        [sys.executable, str(ROOT / "acceptance" / script), *argv], capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(report.read_text())["passed"] is True


def test_gate_fails_on_wrong_entity_shape_and_length(recording: Path, tmp_path: Path) -> None:
    """A position channel declared for another entity with 12 elements fails D4 (exit 1)."""

    def declare(spec: StreamSpec) -> StreamSpec:
        attributes = json.loads(json.dumps(spec.attributes))
        for channel in attributes["channels"]:
            if channel["name"] == "robot.joint_position":
                channel["entity"], channel["shape"] = "other_robot", [12]
        return attrs.evolve(spec, attributes=attributes)

    code, report = _run(_doctor(recording, tmp_path / "shape.fsr", stream=declare), tmp_path)
    assert code == 1
    failures = [f for f in report["failures"] if f.startswith("D4: robot.joint_position")]
    assert any("entity" in f for f in failures)
    assert any("shape" in f for f in failures)


def test_gate_fails_on_a_short_payload(recording: Path, tmp_path: Path) -> None:
    """A tick record one float short of the declared byte length fails E2 (exit 1)."""
    code, report = _run(
        _doctor(recording, tmp_path / "short.fsr", record=lambda r: r._replace(payload=r.payload[:-8])),
        tmp_path,
    )
    assert code == 1
    assert any(f.startswith("E2:") for f in report["failures"]), report["failures"]


def test_gate_fails_on_a_non_finite_sample(recording: Path, tmp_path: Path) -> None:
    """A NaN in one decoded velocity sample fails rule E3 (exit 1)."""

    def poison(rin: RecordIn) -> RecordIn:
        values = np.frombuffer(rin.payload, dtype="<f8").copy()
        values[13 + 4] = np.nan  # velocity element 4
        return rin._replace(payload=values.tobytes())

    code, report = _run(_doctor(recording, tmp_path / "nan.fsr", record=poison), tmp_path)
    assert code == 1
    assert any(f.startswith("E3:") and "non-finite" in f for f in report["failures"])


def test_gate_fails_on_wrong_declared_dtype_and_units(recording: Path, tmp_path: Path) -> None:
    """A stream declaring float32 velocity in degrees fails rule D4."""

    def declare(spec: StreamSpec) -> StreamSpec:
        attributes = json.loads(json.dumps(spec.attributes))
        for channel in attributes["channels"]:
            if channel["name"] == "robot.joint_velocity":
                channel["dtype"], channel["units"] = "<f4", ["deg/s"] * 13
        return attrs.evolve(spec, attributes=attributes)

    code, report = _run(_doctor(recording, tmp_path / "decl.fsr", stream=declare), tmp_path)
    assert code == 1
    assert any("D4: robot.joint_velocity declares dtype" in f for f in report["failures"])
    assert any("D4: robot.joint_velocity declares units" in f for f in report["failures"])


def test_declarations_without_evidence_fail(recording: Path, tmp_path: Path) -> None:
    """A file that declares both channels but holds only gap records fails rule E1."""

    def lose(rin: RecordIn) -> RecordIn:
        return RecordIn.gap(
            rin.stream_id, (rin.global_sequence, rin.global_sequence),
            (rin.stream_sequence, rin.stream_sequence), rin.generation, rin.sim_time_ns,
        )

    code, report = _run(_doctor(recording, tmp_path / "gaps.fsr", record=lose), tmp_path)
    assert code == 1
    assert any(f.startswith("E1: robot.joint_position") for f in report["failures"])
    assert report["evidence"]["robot.joint_velocity"]["records"] == 0


def test_position_only_config_fails(recording: Path, tmp_path: Path) -> None:
    """A Run that does not select joint_velocity explicitly fails rule D2, whatever the file holds."""
    run = yaml.safe_load(CONFIG.read_text())
    del run["plugins"]["record"]["config"]["streams"]["observations"]["include"]["joint_velocity"]
    config = tmp_path / "position-only.yaml"
    config.write_text(yaml.safe_dump(run))
    code, report = _run(recording, tmp_path, config)
    assert code == 1
    assert "D2: streams.observations.include does not select robot.joint_velocity" in report["failures"]


def test_unreadable_inputs_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing FSR is a usage error: exit 2, one line, no traceback."""
    code, _ = _run(tmp_path / "missing.fsr", tmp_path)
    assert code == 2
    err = capsys.readouterr().err
    assert "cannot read" in err
    assert "Traceback" not in err
