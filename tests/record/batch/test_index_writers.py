"""Concurrent index writers keep every row (a folder lock locally, a conditional PUT on S3); a
malformed index is one line; upload refuses bad keys and cleans up after a failed put."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fastsim_record.batch.upload as upload_module
from fastsim_record.batch.index import EpisodeIndexError, read_index, update_index
from fastsim_record.cli import main

Capture = pytest.CaptureFixture[str]
WRITERS = 8


def _row(path: str) -> dict[str, Any]:
    return {"path": path, "size": 1, "error": None}


def _writers(url: str) -> list[BaseException]:
    """8 threads, each merging its own row into the index at ``url`` at the same moment."""
    start = threading.Barrier(WRITERS)
    errors: list[BaseException] = []

    def write(k: int) -> None:
        start.wait()
        try:
            update_index(url, lambda now: [*(now or {}).values(), _row(f"file-{k}.fsr")])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.s3
def test_eight_concurrent_writers_on_s3_keep_every_row(bucket: tuple[Any, str]) -> None:
    """Eight writers into one s3:// index at once: conditional PUTs and retries keep all eight rows."""
    _, url = bucket
    assert _writers(f"{url}/index.parquet") == []
    # a relative path is read back resolved against the index's prefix
    assert sorted(read_index(f"{url}/index.parquet") or {}) == sorted(f"{url}/file-{k}.fsr" for k in range(WRITERS))


def test_eight_concurrent_fsr_index_processes_keep_every_row(dataset: Path, tmp_path: Path) -> None:
    """Eight `fsr index` processes into one local OUT at once: every file's row survives, no lock file remains."""
    files = sorted(dataset.glob("*.fsr"))
    sources = []
    for k in range(WRITERS):
        target = tmp_path / f"src{k}" / f"e{k}.fsr"
        target.parent.mkdir()
        shutil.copy2(files[k % len(files)], target)
        sources.append(target)
    out = tmp_path / "out" / "index.parquet"
    out.parent.mkdir()
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    procs = [subprocess.Popen([sys.executable, "-m", "fastsim_record.cli", "index", str(s), "-o", str(out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
             for s in sources]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read() if p.stderr else ""
    rows = read_index(str(out)) or {}
    assert sorted(rows) == sorted(str(s) for s in sources)
    assert sorted(os.listdir(out.parent)) == ["index.parquet"]  # no lock, no temporary file


@pytest.mark.parametrize(("table", "why"), [
    (pa.table({"size": [1]}), "column 'path' is missing"),
    (pa.table({"path": pa.array([None], pa.string())}), "column 'size' is missing"),
    (pa.table({"path": [1, 2]}), "column 'path' is int64, not string"),
])
def test_a_malformed_index_is_one_line_and_overwrite_replaces_it(
    dataset: Path, tmp_path: Path, capsys: Capture, table: Any, why: str,
) -> None:
    """A Parquet file marked as an index but of the wrong shape: exit 2 with one line; --overwrite replaces it."""
    out = tmp_path / "index.parquet"
    pq.write_table(table.replace_schema_metadata({b"fsr-index": b"1"}), out)
    assert main(["index", str(dataset), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert why in err
    assert err.count("\n") == 1
    assert "pass --overwrite" in err
    assert main(["index", str(dataset), "-o", str(out), "--overwrite"]) == 0
    assert len(read_index(str(out)) or {}) == 3


def test_a_null_path_row_is_refused(tmp_path: Path) -> None:
    """A full-schema index with a null path names the row."""
    from fastsim_record.batch.index import schema

    table = pa.table({f.name: pa.array([None], f.type) for f in schema()}, schema=schema())
    out = tmp_path / "index.parquet"
    pq.write_table(table, out)
    with pytest.raises(EpisodeIndexError, match="row 0 has no 'path'"):
        read_index(str(out))


def test_upload_offers_a_way_past_a_garbage_index(dataset: Path, tmp_path: Path, capsys: Capture) -> None:
    """A garbage URL/index.parquet blocks upload with a line naming --overwrite-index, which replaces it."""
    dest = tmp_path / "store"
    dest.mkdir()
    (dest / "index.parquet").write_bytes(b"not parquet")
    assert main(["upload", str(dataset), f"file://{dest}", "--jobs", "1"]) == 2
    assert "--overwrite-index" in capsys.readouterr().err
    assert main(["upload", str(dataset), f"file://{dest}", "--jobs", "1", "--overwrite-index"]) == 0
    assert len(read_index(f"file://{dest}/index.parquet") or {}) == 3


@pytest.mark.parametrize("url", ["file:///tmp/a/../b", "file:///tmp/a/./b", "file:///tmp/a//b"])
def test_upload_refuses_dot_and_empty_segments(dataset: Path, capsys: Capture, url: str) -> None:
    """A destination with '.', '..' or an empty segment is refused before anything is uploaded."""
    assert main(["upload", str(dataset), url]) == 2
    assert "segment" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["a\nb.fsr", "a?b.fsr", "a#b.fsr"])
def test_upload_refuses_keys_with_newline_or_query_characters(
    dataset: Path, tmp_path: Path, capsys: Capture, name: str,
) -> None:
    """A file whose key would hold a newline, ? or # is refused with one line."""
    folder = tmp_path / "odd"
    folder.mkdir()
    shutil.copy2(next(dataset.glob("*.fsr")), folder / name)
    assert main(["upload", str(folder), f"file://{tmp_path}/store"]) == 2
    err = capsys.readouterr().err
    assert "rename it" in err
    assert err.count("\n") == 1


def test_a_failed_put_that_completed_late_is_deleted_unless_it_verifies(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture,
) -> None:
    """A put that raises after the store wrote a wrong object: the object is deleted and the file reported failed."""
    def late(fs: Any, local: str, remote: str) -> None:
        fs.makedirs(os.path.dirname(remote), exist_ok=True)
        with fs.open(remote, "wb") as handle:
            handle.write(b"half of it")
        raise ConnectionError("connection reset during CompleteMultipartUpload")

    monkeypatch.setattr(upload_module, "_put", late)
    dest = tmp_path / "store"
    assert main(["upload", str(dataset), f"file://{dest}", "--jobs", "1", "--no-index"]) == 2
    assert "the object the failed upload left was deleted" in capsys.readouterr().err
    assert not any(dest.rglob("*.fsr"))


def test_a_failed_put_whose_object_verifies_counts_as_uploaded(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture,
) -> None:
    """A put that raises although the store holds the whole file: verified, kept and reported uploaded."""
    real = upload_module._put

    def late(fs: Any, local: str, remote: str) -> None:
        real(fs, local, remote)
        raise ConnectionError("timeout waiting for the last part's response")

    monkeypatch.setattr(upload_module, "_put", late)
    dest = tmp_path / "store"
    assert main(["upload", str(dataset), f"file://{dest}", "--jobs", "1"]) == 0
    assert "3 uploaded and verified" in capsys.readouterr().out
