"""``reading.summary``: what a file says about its Run, derived once for ``fsr info``,
the index row and the batch jobs; a value of the wrong type is ``None``, never passed on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fastsim_record.cli import main
from fastsim_recording_format import FsrReader, RecordIn, RecordKind, RunMetadata, StreamSpec
from fastsim_recording_format.reading import open as open_recording
from fastsim_recording_format.reading.summary import run_facts, summary, task_result
from fastsim_recording_format.writer import FsrWriter

JSON = {"media_type": "application/json"}


def write_file(path: Path, attributes: dict[str, Any], *, created: dict[str, Any] | None = None,
               result: dict[str, Any] | None = None) -> Path:
    """A sealed file with these run attributes, a lifecycle stream (``run.created`` with
    ``created``) and an events stream (a ``task.result`` with ``result``)."""
    streams = [StreamSpec(1, "lifecycle", "lifecycle", JSON, {}), StreamSpec(2, "events", "events", JSON, {})]
    writer = FsrWriter(str(path), RunMetadata("run-1", "completion-1", attributes=attributes), streams, "structural")
    try:
        records = [RecordIn(1, RecordKind.DATA, 1, 1, 0, 0, json.dumps({"event": "run.created", **(created or {})}).encode())]
        if result is not None:
            payload = json.dumps({"event": "task.result", "data": result}).encode()
            records.append(RecordIn(2, RecordKind.DATA, 2, 1, 0, 1000, payload))
        writer.write_batch(records)
        writer.seal({"last_global_sequence": len(records)})
    finally:
        writer.close()
    return path


WRONG = {"run": {"name": 5, "backend": ["mujoco"], "seed": "abc", "episode": 1.5}, "task": {"name": "reach"}}
WRONG_RESULT = {"task": 7, "success": "yes", "return": "1.0", "steps": True}


def test_wrong_types_in_the_metadata_are_none(tmp_path: Path) -> None:
    """name 5, seed "abc", success "yes": each is None in the run facts, task and summary."""
    path = write_file(tmp_path / "wrong.fsr", WRONG, result=WRONG_RESULT)
    with FsrReader(str(path)) as reader:
        assert run_facts(reader) == {"name": None, "backend": None, "seed": None, "episode": None}
        assert task_result(reader) == {"task": None, "success": None, "failure": None, "return": None,
                                       "steps": None}
        info = summary(reader)
    assert info["run"]["seed"] is None
    assert info["task"]["success"] is None


def test_typed_metadata_is_kept(tmp_path: Path) -> None:
    """Values of the right type are kept (an int return becomes a float)."""
    attributes = {"run": {"name": "pick", "backend": "mujoco", "seed": 4, "episode": 2}, "task": {"name": "reach"}}
    path = write_file(tmp_path / "ok.fsr", attributes, result={"task": "reach", "success": True, "return": 3,
                                                                "steps": 9})
    with FsrReader(str(path)) as reader:
        assert run_facts(reader) == {"name": "pick", "backend": "mujoco", "seed": 4, "episode": 2}
        assert task_result(reader) == {"task": "reach", "success": True, "failure": None, "return": 3.0,
                                       "steps": 9}


@pytest.mark.parametrize(("attributes", "created", "expected"), [
    ({"run": {"name": "pick", "backend": "mujoco", "seed": 4}}, None, ("pick", "mujoco", 4)),
    (WRONG, None, (None, None, None)),
    ({"name": "old", "seed": 3}, {"name": "created", "backend": "synthetic"}, ("old", "synthetic", 3)),
    ({}, {"name": "created", "backend": "synthetic"}, ("created", "synthetic", None)),
    ({}, {"name": 5, "backend": None}, (None, None, None)),
])
def test_the_summary_and_recording_info_agree(tmp_path: Path, attributes: dict[str, Any],
                                              created: dict[str, Any] | None,
                                              expected: tuple[Any, ...]) -> None:
    """The one rule: attributes.run (else the attributes), then run.created, each typed."""
    path = write_file(tmp_path / "run.fsr", attributes, created=created)
    with FsrReader(str(path)) as reader:
        facts = run_facts(reader)
    with open_recording(path) as recording:
        info = recording.info
    assert (facts["name"], facts["backend"], facts["seed"]) == expected
    assert (info.name, info.backend, info.seed) == expected


def test_fsr_info_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``fsr info --json`` is the summary plus ``segments`` per stream; the text shows a wrong-typed name as ``-``."""
    path = write_file(tmp_path / "wrong.fsr", WRONG, result=WRONG_RESULT)
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    with FsrReader(str(path)) as reader:
        expected = json.loads(json.dumps(summary(reader)))
    for stream in expected["streams"]:
        stream.setdefault("segments", stream["generations"])
    assert info == expected
    assert main(["info", str(path)]) == 0
    assert "run -" in capsys.readouterr().out
