"""``fsr index`` of a recording whose metadata has values of the wrong type (``name: 5``,
``seed: "abc"``, ``success: "yes"``): the row holds nulls there, never a raw
ArrowTypeError and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastsim_record.batch.index import read_index
from fastsim_record.cli import main
from fastsim_recording_format import RecordIn, RecordKind, RunMetadata, StreamSpec
from fastsim_recording_format.writer import FsrWriter

ATTRIBUTES = {"run": {"name": 5, "backend": ["mujoco"], "seed": "abc", "episode": 1.5}, "task": {"name": "reach"}}
RESULT = {"task": 7, "success": "yes", "return": "1.0", "steps": True}


def _write(path: Path) -> Path:
    streams = [StreamSpec(1, "events", "events", {"media_type": "application/json"}, {})]
    writer = FsrWriter(str(path), RunMetadata("run-1", "completion-1", attributes=ATTRIBUTES), streams, "structural")
    try:
        payload = json.dumps({"event": "task.result", "data": RESULT}).encode()
        writer.write_batch([RecordIn(1, RecordKind.DATA, 1, 1, 0, 0, payload)])
        writer.seal({"last_global_sequence": 1})
    finally:
        writer.close()
    return path


@pytest.mark.parametrize("jobs", [None, "2"])
def test_wrong_typed_metadata_is_indexed_as_nulls(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   jobs: str | None) -> None:
    """In this process and in a pool: exit 0, the Run's wrong-typed columns null."""
    folder = tmp_path / "data"
    folder.mkdir()
    path = _write(folder / "wrong.fsr")
    out = tmp_path / "index.parquet"
    argv = ["index", str(folder), "-o", str(out)] + (["--jobs", jobs] if jobs else [])
    assert main(argv) == 0, capsys.readouterr().err
    assert "ArrowTypeError" not in capsys.readouterr().err
    row = (read_index(str(out)) or {})[str(path)]
    assert row["error"] is None
    assert row["run_id"] == "run-1"
    assert (row["run_name"], row["backend"], row["seed"], row["episode"]) == (None, None, None, None)
    assert (row["task"], row["success"], row["return"]) == (None, None, None)
