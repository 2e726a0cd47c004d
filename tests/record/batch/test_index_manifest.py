"""The index as a dataset's manifest (issue 25): relative paths, the outcome columns users
filter on, ``segments``, one line without pyarrow, one line for a missing bucket."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.cli import main

Capture = pytest.CaptureFixture[str]
ROOT = Path(__file__).resolve().parents[3]
OUTCOME = ("task", "success", "return", "terminated", "truncated", "env_id")


def _table(out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(out).to_pylist()
    return rows


def test_paths_below_the_index_are_relative_and_others_absolute(dataset: Path, tmp_path: Path) -> None:
    """Files below the index's folder are stored relative to it; a file elsewhere keeps its absolute path."""
    outside = tmp_path / "outside"
    outside.mkdir()
    lone = outside / "lone.fsr"
    shutil.copy2(sorted(dataset.glob("*.fsr"))[0], lone)
    out = dataset / "index.parquet"
    assert main(["index", str(dataset), str(lone), "-o", str(out)]) == 0
    paths = [r["path"] for r in _table(out)]
    assert paths == sorted([str(lone), "batch-test-seed1-0000.fsr", "batch-test-seed2-0001.fsr",
                            "batch-test-seed3-0002.fsr"])
    nested = tmp_path / "index.parquet"  # one folder up: the folder's name is part of the path
    assert main(["index", str(dataset), "-o", str(nested)]) == 0
    assert next(r["path"] for r in _table(nested)) == "dataset/batch-test-seed1-0000.fsr"


def test_a_moved_folder_keeps_its_index_and_reindexing_reads_nothing(
        dataset: Path, tmp_path: Path, capsys: Capture) -> None:
    """Move the folder with its index: ``fsr index`` there finds every row unchanged (no file read)."""
    assert main(["index", str(dataset), "-o", str(dataset / "index.parquet")]) == 0
    moved = tmp_path / "moved" / "set"
    moved.parent.mkdir()
    shutil.move(str(dataset), moved)
    capsys.readouterr()
    assert main(["index", str(moved), "-o", str(moved / "index.parquet")]) == 0
    assert "0 read, 3 unchanged" in capsys.readouterr().out
    assert len(_table(moved / "index.parquet")) == 3


def test_segments_and_the_outcome_columns_are_null_where_a_file_has_none(dataset: Path, tmp_path: Path) -> None:
    """``segments`` counts generations (as the old ``generations``); a plain Run's outcome columns are null."""
    out = tmp_path / "index.parquet"
    assert main(["index", str(dataset), "-o", str(out)]) == 0
    for row in _table(out):
        assert row["segments"] == row["generations"] == 1
        assert {k: row[k] for k in OUTCOME} == dict.fromkeys(OUTCOME)


def test_a_task_run_has_its_outcome(tmp_path: Path) -> None:
    """The reach example, cut short: no success, not terminated, truncated by the Run's duration."""
    result = run_session(prepare_run(ROOT / "examples" / "policy" / "run.yaml", duration_s=0.3), tmp_path / "out")
    assert result.outcome.ok
    assert main(["index", str(tmp_path / "out"), "-o", str(tmp_path / "index.parquet")]) == 0
    (row,) = _table(tmp_path / "index.parquet")
    assert (row["task"], row["success"], row["terminated"], row["truncated"], row["env_id"]) == (
        "reach", False, False, True, None)
    assert row["return"] > 0


def test_a_gymnasium_recording_has_its_env_id_and_ending(tmp_path: Path) -> None:
    """CartPole: ``env_id`` from the spec; ``terminated``/``truncated``/``return`` from ``gym.episode_end``."""
    gym = pytest.importorskip("gymnasium")
    from fastsim_record.gym import RecordEpisodes

    env = RecordEpisodes(gym.make("CartPole-v1"), tmp_path / "out")
    env.reset(seed=1)
    steps, ended = 0, False
    while not ended:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps, ended = steps + 1, terminated or truncated
    env.reset(seed=2)
    env.step(0)
    env.close()  # the second episode ends as truncated, completion stopped
    assert main(["index", str(tmp_path / "out"), "-o", str(tmp_path / "index.parquet")]) == 0
    first, second = _table(tmp_path / "index.parquet")
    assert (first["env_id"], first["terminated"], first["truncated"], first["return"]) == (
        "CartPole-v1", True, False, float(steps))
    assert (second["env_id"], second["terminated"], second["truncated"], second["completion"]) == (
        "CartPole-v1", False, True, "stopped")
    assert first["task"] is None
    assert first["success"] is None


def test_fsr_index_without_pyarrow_is_one_line(dataset: Path, tmp_path: Path) -> None:
    """No pyarrow: one line naming the extra, exit 2, no traceback, nothing written."""
    script = ("import sys; sys.modules['pyarrow'] = None\n"
              "from fastsim_record.cli import main\n"
              f"sys.exit(main(['index', {str(dataset)!r}, '-o', {str(tmp_path / 'i.parquet')!r}]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ})
    assert done.returncode == 2
    assert done.stderr == "fsr index: writing an index needs pyarrow: pip install 'fastsim-plugin-record[index]'\n"
    assert not (tmp_path / "i.parquet").exists()


@pytest.mark.s3
def test_a_missing_bucket_is_one_line(dataset: Path, s3_server: str, capsys: Capture) -> None:
    """``fsr upload`` and ``fsr index`` to a bucket that does not exist: one line each, exit 2."""
    assert main(["upload", str(dataset), "s3://no-such-bucket/x", "--jobs", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "fsr upload: s3://no-such-bucket/x: the bucket 'no-such-bucket' does not exist\n"
    assert captured.out == ""
    assert main(["index", str(dataset), "-o", "s3://no-such-bucket/x/index.parquet", "--jobs", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.err == ("fsr index: s3://no-such-bucket/x/index.parquet: the bucket 'no-such-bucket' "
                            "does not exist\n")


@pytest.mark.s3
def test_an_index_on_s3_is_an_export_source(dataset: Path, bucket: tuple[Any, str], tmp_path: Path,
                                            capsys: Capture) -> None:
    """``fsr upload`` writes ``URL/index.parquet`` with paths relative to it; ``fsr export`` reads its rows' objects."""
    pytest.importorskip("foxglove", reason="the mcap extra (foxglove-sdk) is not installed")
    fs, url = bucket
    assert main(["upload", str(dataset), url, "--jobs", "1"]) == 0
    fs.invalidate_cache()
    with fs.open(f"{url.removeprefix('s3://')}/index.parquet", "rb") as handle:
        assert sorted(pq.read_table(handle).column("path").to_pylist()) == sorted(p.name for p in dataset.glob("*.fsr"))
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["export", f"{url}/index.parquet", "--to", "mcap", "-o", str(out), "--quiet",
                 "--where", "seed != 2"]) == 0
    assert capsys.readouterr().out.strip().endswith("(mcap); left out 1 of 3 episodes: 1 by where")
    assert len(list(out.glob("*.mcap"))) == 2
