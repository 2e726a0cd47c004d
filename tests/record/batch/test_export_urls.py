"""fsr export over URLs and many sources: every invalid source named, S3 in and out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fastsim_record.cli import main

Capture = pytest.CaptureFixture[str]


def test_export_names_every_invalid_source(dataset: Path, tmp_path: Path, capsys: Capture) -> None:
    """Two broken sources among good ones: both named, then a summary (exit 1), nothing written."""
    pytest.importorskip("foxglove", reason="the mcap extra (foxglove-sdk) is not installed")
    for name in ("a-bad.fsr", "b-bad.fsr"):
        (dataset / name).write_bytes(b"\x00" * 200)
    out = tmp_path / "out"
    assert main(["export", str(dataset), "--to", "mcap", "-o", str(out), "--quiet", "--jobs", "2"]) == 1
    *err, summary = capsys.readouterr().err.splitlines()
    assert [line.split(":")[1].strip() for line in err] == [str(dataset / "a-bad.fsr"), str(dataset / "b-bad.fsr")]
    assert all(line.startswith("invalid: ") for line in err)
    assert summary == "fsr export: 2 of 5 files failed validation; nothing was exported"
    assert not out.exists()


@pytest.mark.s3
def test_export_reads_and_writes_s3_urls(dataset: Path, bucket: tuple[Any, str], capsys: Capture) -> None:
    """Sources under an s3:// prefix export to an MCAP object at an s3:// URL; an existing one is refused."""
    pytest.importorskip("foxglove", reason="the mcap extra (foxglove-sdk) is not installed")
    fs, url = bucket
    assert main(["upload", str(dataset), url, "--no-index", "--jobs", "1"]) == 0
    target = f"{url}/exports/one.mcap"
    one = sorted(dataset.glob("*.fsr"))[0].name
    assert main(["export", f"{url}/{one}", "--to", "mcap", "-o", target, "--quiet"]) == 0
    assert f"uploaded the export to {target}" in capsys.readouterr().out
    fs.invalidate_cache()
    assert fs.cat_file(target.removeprefix("s3://"))[:8] == b"\x89MCAP0\r\n"
    assert main(["export", f"{url}/{one}", "--to", "mcap", "-o", target, "--quiet"]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
