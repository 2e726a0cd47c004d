"""Batch jobs and sweeps on a real local Ray (session fixture), against the process pool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.record.batch.conftest import write_run

from fastsim_record.cli import main

Capture = pytest.CaptureFixture[str]
pytestmark = [pytest.mark.ray, pytest.mark.s3]


def test_pool_and_ray_give_identical_index_rows(dataset: Path, tmp_path: Path, ray_local: Any) -> None:
    """The same files indexed by a 2-process pool and by Ray tasks give equal tables."""
    bad = dataset / "broken.fsr"
    bad.write_bytes(b"FSR" + b"\x00" * 300)
    pool, on_ray = tmp_path / "pool.parquet", tmp_path / "ray.parquet"
    assert main(["index", str(dataset), "-o", str(pool), "--jobs", "2", "--sha256"]) == 1
    assert main(["index", str(dataset), "-o", str(on_ray), "--ray", "--sha256"]) == 1
    a, b = pq.read_table(pool), pq.read_table(on_ray)
    assert a.num_rows == 4
    assert a.equals(b)
    assert ray_local.is_initialized()  # the command attached to the running Ray and left it running


def test_validate_on_ray_names_the_failed_file(dataset: Path, ray_local: Any, capsys: Capture) -> None:
    """fsr validate --ray: same per-file lines and summary as the pool, exit 1 naming the bad file."""
    bad = dataset / "broken.fsr"
    bad.write_bytes(b"\x00" * 64)
    assert main(["validate", str(dataset), "--ray"]) == 1
    captured = capsys.readouterr()
    assert "validated 4 files (structural): 3 valid, 1 failed" in captured.out
    assert f"  {bad}: invalid: " in captured.err


def test_sweep_on_ray_records_validates_and_uploads(
    tmp_path: Path, ray_local: Any, bucket: tuple[Any, str], capsys: Capture,
) -> None:
    """fsr record --episodes 2 --ray --upload: each task records, commits, uploads; the index lists both."""
    fs, url = bucket
    run = write_run(tmp_path, duration=0.2)
    out = tmp_path / "node-disk"
    code = main(["record", str(run), "--episodes", "2", "--seed", "7", "--output-dir", str(out),
                 "--ray", "--upload", url, "--json"])
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0, data
    assert data["counts"] == {"committed": 2, "stopped": 0, "failed": 0, "not run": 0, "committed before": 0}
    assert sorted(p.name for p in out.glob("*.fsr")) == ["batch-test-seed7-0000.fsr", "batch-test-seed8-0001.fsr"]
    fs.invalidate_cache()
    with fs.open(url.removeprefix("s3://") + "/index.parquet", "rb") as handle:
        rows = pq.read_table(handle).to_pylist()
    assert sorted((r["seed"], r["completion"]) for r in rows) == [(7, "normal"), (8, "normal")]
    assert sorted(r["path"] for r in rows) == [p.name for p in sorted(out.glob("*.fsr"))]  # relative to the index


def test_record_ray_options_need_a_sweep(tmp_path: Path, capsys: Capture) -> None:
    """--ray or --upload without --episodes, or --ray with --jobs: one line, exit 2, nothing recorded."""
    run = write_run(tmp_path)
    assert main(["record", str(run), "--ray", "--output-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == "fsr record: --ray and --upload: only with --episodes N"
    assert main(["record", str(run), "--episodes", "2", "--jobs", "2", "--ray"]) == 2
    assert capsys.readouterr().err.strip() == "fsr record: --jobs and --ray: choose one"
    assert not list(tmp_path.glob("*.fsr"))
