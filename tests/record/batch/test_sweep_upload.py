"""The plugin's sweep (`fsr record --episodes N --upload URL`, the executor port): --resume and the index merge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastsim_record.cli import main

from .conftest import write_run

pq = pytest.importorskip("pyarrow.parquet")


def test_an_uploading_sweep_resumes_and_merges_its_rows_into_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """1 episode, then --episodes 3 --resume: episodes 1, 2 (seeds 8, 9) uploaded; the index keeps the first row."""
    run = write_run(tmp_path, duration=0.2)
    node, url = tmp_path / "node", f"file://{tmp_path / 'bucket'}"
    assert main(["record", str(run), "--episodes", "1", "--seed", "7", "--output-dir", str(node), "--upload", url]) == 0
    capsys.readouterr()
    code = main(["record", str(run), "--episodes", "3", "--seed", "7", "--output-dir", str(node), "--upload", url,
                 "--resume", "--jobs", "2", "--json"])
    captured = capsys.readouterr()
    data = json.loads(captured.out.strip().splitlines()[-1])
    assert code == 0, data
    assert data["counts"] == {"committed": 2, "stopped": 0, "failed": 0, "not run": 0, "committed before": 1}
    assert sorted((r["episode"], r["seed"]) for r in data["episodes"]) == [(1, 8), (2, 9)]
    assert "fsr record: --resume: 1 of 3 episodes committed already, 0 left as .incomplete; recording 2" in captured.err
    rows = pq.read_table(tmp_path / "bucket" / "index.parquet").to_pylist()
    assert sorted((r["seed"], r["episode"], Path(r["path"]).name) for r in rows) == [
        (7, 0, "batch-test-seed7-0000.fsr"), (8, 1, "batch-test-seed8-0001.fsr"), (9, 2, "batch-test-seed9-0002.fsr")]
