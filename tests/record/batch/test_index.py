"""fsr index: one row per file, incremental, atomic, invalid files as rows, refusals."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from fastsim_record.cli import main
from fastsim_recording_format.reading._sources import resolve_path

Capture = pytest.CaptureFixture[str]


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    """The index's rows by file (a stored path is relative to the index's folder)."""
    return {resolve_path(str(path), row["path"]): row for row in pq.read_table(path).to_pylist()}


def test_index_has_one_row_per_file_with_the_run_facts(dataset: Path, tmp_path: Path, capsys: Capture) -> None:
    """Every episode becomes a row with its Run, completion, time span, counts and receipt identity."""
    out = tmp_path / "index.parquet"
    assert main(["index", str(dataset), "-o", str(out), "--jobs", "1", "--sha256"]) == 0
    rows = _rows(out)
    assert len(rows) == 3
    row = rows[str(dataset / "batch-test-seed1-0000.fsr")]
    assert (row["run_name"], row["backend"], row["seed"], row["episode"]) == ("batch-test", "synthetic", 1, 0)
    assert (row["completion"], row["degraded"], row["recovered"], row["error"]) == ("normal", False, False, None)
    assert row["sim_duration_s"] == pytest.approx(0.3, abs=0.05)
    assert dict((p["name"], p["count"]) for p in row["records_by_kind"])["observations"] > 0
    assert row["footer_identity"]
    assert len(str(row["sha256"])) == 64
    assert row["size"] == os.path.getsize(dataset / "batch-test-seed1-0000.fsr")
    assert "indexed 3 files" in capsys.readouterr().out
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_index_is_incremental_unchanged_files_are_not_read(dataset: Path, tmp_path: Path, capsys: Capture) -> None:
    """A second run reads nothing; touching one file (new mtime) reads only that one."""
    out = tmp_path / "index.parquet"
    assert main(["index", str(dataset), "-o", str(out), "--jobs", "1"]) == 0
    capsys.readouterr()
    assert main(["index", str(dataset), "-o", str(out), "--jobs", "1"]) == 0
    assert "0 read, 3 unchanged" in capsys.readouterr().out
    target = dataset / "batch-test-seed2-0001.fsr"
    os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 10**9))
    assert main(["index", str(dataset), "-o", str(out), "--jobs", "1"]) == 0
    assert "1 read, 2 unchanged" in capsys.readouterr().out


def test_an_invalid_file_is_a_row_with_its_error_and_the_exit_names_it(
    dataset: Path, tmp_path: Path, capsys: Capture,
) -> None:
    """A truncated file is indexed as a row carrying its one-line error; exit 1 names it."""
    bad = dataset / "truncated.fsr"
    bad.write_bytes((dataset / "batch-test-seed1-0000.fsr").read_bytes()[:5000])
    (dataset / "x.fsr.incomplete").write_bytes(b"partial")
    out = tmp_path / "index.parquet"
    assert main(["index", str(dataset), "-o", str(out)]) == 1
    rows = _rows(out)
    assert len(rows) == 4  # the .incomplete is never listed
    assert rows[str(bad)]["error"].startswith("invalid: ")
    assert rows[str(bad)]["run_id"] is None
    err = capsys.readouterr().err
    assert str(bad) in err
    assert "at offset" in err
    assert "Traceback" not in err


def test_an_existing_out_that_is_not_an_index_is_refused(dataset: Path, tmp_path: Path, capsys: Capture) -> None:
    """OUT holding something else is never replaced without --overwrite (exit 2, one line)."""
    out = tmp_path / "notes.parquet"
    out.write_text("my notes")
    assert main(["index", str(dataset), "-o", str(out)]) == 2
    assert out.read_text() == "my notes"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "is not an episode index" in err[0]
    assert main(["index", str(dataset), "-o", str(out), "--overwrite"]) == 0
    assert len(_rows(out)) == 3


def test_missing_source_is_one_line_exit_2(tmp_path: Path, capsys: Capture) -> None:
    """A SOURCE that does not exist: one line naming it, exit 2, no OUT written."""
    assert main(["index", str(tmp_path / "nope"), "-o", str(tmp_path / "i.parquet")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"fsr index: {tmp_path / 'nope'}: no such file or folder"]
    assert not (tmp_path / "i.parquet").exists()


def test_the_readme_query_finds_normal_non_degraded_long_episodes(dataset: Path, tmp_path: Path) -> None:
    """The README's pyarrow query selects normal, non-degraded episodes by duration."""
    out = tmp_path / "index.parquet"
    assert main(["index", str(dataset), "-o", str(out)]) == 0
    table = pq.read_table(out)
    # the README's query, with 0.2 s instead of 5 s for these short test episodes
    keep = table.filter((pc.field("completion") == "normal") & ~pc.field("degraded")
                        & (pc.field("sim_duration_s") > 0.2))
    assert keep.num_rows == 3
    assert table.filter(pc.field("sim_duration_s") > 5.0).num_rows == 0
