"""fsr upload to a real S3 server (moto): verified, idempotent, resumable; URLs as sources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import fastsim_record.batch.upload as upload_module
from fastsim_record.cli import main
from fastsim_recording_format.reading._sources import resolve_path

Capture = pytest.CaptureFixture[str]
pytestmark = pytest.mark.s3


def _index(fs: Any, url: str) -> dict[str, dict[str, Any]]:
    fs.invalidate_cache()
    with fs.open(url.removeprefix("s3://") + "/index.parquet", "rb") as handle:
        return {resolve_path(f"{url}/index.parquet", row["path"]): row for row in pq.read_table(handle).to_pylist()}


def test_upload_verifies_writes_the_index_and_skips_identical_objects(
    dataset: Path, bucket: tuple[Any, str], capsys: Capture,
) -> None:
    """Every committed file is uploaded, verified and indexed; a second run uploads nothing."""
    fs, url = bucket
    (dataset / "crashed.fsr.incomplete").write_bytes(b"partial")
    (dataset / ".quarantine").mkdir()
    (dataset / ".quarantine" / "bad.fsr").write_bytes(b"bad")
    assert main(["upload", str(dataset), url, "--jobs", "1"]) == 0
    assert "3 uploaded and verified, 0 already there" in capsys.readouterr().out
    fs.invalidate_cache()
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.find(url.removeprefix("s3://")))
    assert names == ["batch-test-seed1-0000.fsr", "batch-test-seed2-0001.fsr", "batch-test-seed3-0002.fsr",
                     "index.parquet"]
    rows = _index(fs, url)
    assert sorted(rows) == [f"{url}/{n}" for n in names[:3]]
    assert all(row["etag"] and len(row["sha256"]) == 64 and row["error"] is None for row in rows.values())
    assert main(["upload", str(dataset), url, "--jobs", "2"]) == 0
    assert "0 uploaded and verified, 3 already there (identical)" in capsys.readouterr().out


def test_an_interrupted_upload_resumes_where_it_stopped(
    dataset: Path, bucket: tuple[Any, str], monkeypatch: pytest.MonkeyPatch, capsys: Capture,
) -> None:
    """Interrupted after the first object, a rerun uploads only the rest and skips the one done."""
    fs, url = bucket
    real_put = upload_module._put
    calls: list[str] = []

    def interrupted(fs_: Any, local: str, remote: str) -> None:
        if calls:
            raise KeyboardInterrupt
        calls.append(remote)
        real_put(fs_, local, remote)

    monkeypatch.setattr(upload_module, "_put", interrupted)
    assert main(["upload", str(dataset), url, "--jobs", "1"]) == 130
    monkeypatch.setattr(upload_module, "_put", real_put)
    fs.invalidate_cache()
    assert len(fs.find(url.removeprefix("s3://"))) == 1  # one object, no index yet
    capsys.readouterr()
    assert main(["upload", str(dataset), url, "--jobs", "1"]) == 0
    assert "2 uploaded and verified, 1 already there (identical)" in capsys.readouterr().out
    assert len(_index(fs, url)) == 3


def test_a_corrupted_object_is_detected_by_verification(
    dataset: Path, bucket: tuple[Any, str], monkeypatch: pytest.MonkeyPatch, capsys: Capture,
) -> None:
    """A store that keeps different bytes fails verification: exit 1 names the file, the object is deleted."""
    fs, url = bucket
    real_put = upload_module._put

    def corrupting(fs_: Any, local: str, remote: str) -> None:
        real_put(fs_, local, remote)
        data = bytearray(fs_.cat_file(remote))
        data[len(data) // 2] ^= 0xFF
        fs_.pipe_file(remote, bytes(data))

    monkeypatch.setattr(upload_module, "_put", corrupting)
    one = sorted(dataset.glob("*.fsr"))[0]
    assert main(["upload", str(one), url, "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert f"{one}: verification failed for {url}/{one.name} (SHA-256 differs)" in err
    fs.invalidate_cache()
    assert not fs.exists(f"{url.removeprefix('s3://')}/{one.name}")


def test_a_changed_object_is_re_read_and_replaced(dataset: Path, bucket: tuple[Any, str], capsys: Capture) -> None:
    """An object altered in the store after upload (same size, new ETag) is detected and uploaded again."""
    fs, url = bucket
    one = sorted(dataset.glob("*.fsr"))[0]
    assert main(["upload", str(one), url, "--jobs", "1"]) == 0
    key = f"{url.removeprefix('s3://')}/{one.name}"
    data = bytearray(fs.cat_file(key))
    data[100] ^= 0x01
    fs.pipe_file(key, bytes(data))
    capsys.readouterr()
    assert main(["upload", str(one), url, "--jobs", "1"]) == 0
    assert "1 uploaded and verified, 0 already there" in capsys.readouterr().out
    fs.invalidate_cache()
    assert fs.cat_file(key) == one.read_bytes()


def test_urls_are_sources_of_validate_and_an_incremental_index(
    dataset: Path, bucket: tuple[Any, str], tmp_path: Path, capsys: Capture,
) -> None:
    """s3:// prefixes validate and index like folders; an unchanged ETag is not read again."""
    _, url = bucket
    assert main(["upload", str(dataset), url, "--no-index", "--jobs", "1"]) == 0
    assert main(["validate", url, "--jobs", "2"]) == 0
    assert "3 valid, 0 failed" in capsys.readouterr().out
    out = f"{url}/catalog/index.parquet"
    assert main(["index", url, "-o", out, "--jobs", "1"]) == 0
    assert main(["index", url, "-o", out, "--jobs", "1"]) == 0
    assert "0 read, 3 unchanged" in capsys.readouterr().out
    local = tmp_path / "local.parquet"
    assert main(["index", url, "-o", str(local), "--jobs", "1"]) == 0
    assert all(row["etag"] for row in pq.read_table(local).to_pylist())


def test_bad_upload_inputs_are_one_line(dataset: Path, bucket: tuple[Any, str], capsys: Capture) -> None:
    """A missing SOURCE, a URL as SOURCE, an uncommitted file: one line each, documented codes."""
    _, url = bucket
    assert main(["upload", str(dataset / "nope.fsr"), url]) == 2
    assert capsys.readouterr().err.strip() == f"fsr upload: {dataset / 'nope.fsr'}: no such file or folder"
    assert main(["upload", url, url]) == 2
    assert "SOURCE must be a file or folder" in capsys.readouterr().err
    partial = dataset / "x.fsr.incomplete"
    partial.write_bytes(b"partial")
    assert main(["upload", str(partial), url, "--jobs", "1"]) == 1
    assert "not a committed file" in capsys.readouterr().err
