"""Index rows: camera aliases, merging with earlier rows, errors read again; store errors are one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fastsim_record.adapters.codecs import JpegEncoder, PngEncoder
from fastsim_record.batch.executors import _chunks
from fastsim_record.batch.jobs import CheckTask, index_job
from fastsim_record.batch.sources import expand
from fastsim_record.cli import main
from fastsim_record.testing.cameras import write_camera_fsr
from fastsim_recording_format.reading._sources import resolve_path

pytest.importorskip("pyarrow")
Capture = pytest.CaptureFixture[str]


def _rows(out: Path) -> dict[str, dict[str, object]]:
    import pyarrow.parquet as pq

    return {resolve_path(str(out), str(r["path"])): r for r in pq.read_table(out).to_pylist()}


def test_cameras_column_holds_the_aliases(tmp_path: Path) -> None:
    """A file with cameras 'front' and 'wrist' indexes exactly those two aliases."""
    fsr = tmp_path / "cams.fsr"
    write_camera_fsr(fsr, {"front": JpegEncoder(64, 48), "wrist": PngEncoder(64, 48)}, [(0, 1, 58.0)])
    (entry,) = expand([str(fsr)])
    outcome = index_job(CheckTask(entry))
    assert outcome.data is not None
    assert sorted(outcome.data["cameras"]) == ["front", "wrist"]


def test_rows_of_other_files_are_kept_unless_pruned(episodes: list[Path], tmp_path: Path, capsys: Capture) -> None:
    """Indexing one file into an index of three keeps the other two rows; --prune drops them."""
    out = tmp_path / "index.parquet"
    assert main(["index", *map(str, episodes), "-o", str(out)]) == 0
    assert main(["index", str(episodes[0]), "-o", str(out)]) == 0
    assert sorted(_rows(out)) == sorted(map(str, episodes))
    assert main(["index", str(episodes[0]), "-o", str(out), "--prune"]) == 0
    assert sorted(_rows(out)) == [str(episodes[0])]
    assert "indexed 1 file to" in capsys.readouterr().out


def test_a_row_with_an_error_is_read_again(episodes: list[Path], tmp_path: Path, capsys: Capture) -> None:
    """A file that failed once is read again on the next run, not reused with its old error."""
    bad = tmp_path / "bad.fsr"
    bad.write_bytes(Path(episodes[0]).read_bytes()[:100])
    out = tmp_path / "index.parquet"
    assert main(["index", str(bad), "-o", str(out)]) == 1  # the file is left as it is
    capsys.readouterr()
    assert main(["index", str(bad), "-o", str(out)]) == 1
    assert ": 1 read, 0 unchanged" in capsys.readouterr().out


def test_episodes_run_one_per_task_and_checks_in_chunks() -> None:
    """Non-idempotent items (episodes) are never chunked; checks are chunked."""
    assert [len(c) for c in _chunks(list(range(100)), 2, idempotent=False)] == [1] * 100
    assert max(len(c) for c in _chunks(list(range(100)), 2)) > 1


def test_an_s3_url_without_credentials_is_one_line(tmp_path: Path) -> None:
    """No AWS credentials: fsr validate names the URL and the store's error in one line, exit 2."""
    pytest.importorskip("s3fs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_EC2_METADATA_DISABLED": "true", "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
    done = subprocess.run([sys.executable, "-m", "fastsim_record.cli", "validate", "s3://no-bucket/a.fsr"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("fsr validate: s3://no-bucket/a.fsr: ")
    assert "Traceback" not in done.stderr
