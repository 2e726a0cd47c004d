"""``fsr export`` as a command: sources, refusals, exit codes, one line, never a traceback."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from fastsim_record.cli import main
from fastsim_record.export import TARGETS, Exporter, MissingExtra, exporter


def _needs_mcap() -> None:
    pytest.importorskip("foxglove", reason="the mcap extra (foxglove-sdk) is not installed")

_NEEDS = {"lerobot": ("pyarrow", "av"), "mcap": ("foxglove",), "rerun": ("rerun",)}


def test_existing_out_is_refused_without_overwrite(
    droid_fsr: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing OUT is kept byte for byte and the command exits 2 with one line naming --overwrite."""
    _needs_mcap()
    out = tmp_path / "ep.mcap"
    out.write_bytes(b"mine")
    assert main(["export", str(droid_fsr), "--to", "mcap", "-o", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--overwrite" in err
    assert str(out) in err
    assert out.read_bytes() == b"mine"
    assert main(["export", str(droid_fsr), "--to", "mcap", "-o", str(out), "--quiet", "--overwrite"]) == 0
    assert out.read_bytes()[:8] == b"\x89MCAP0\r\n"
    assert [p.name for p in tmp_path.iterdir()] == ["ep.mcap"]  # no temporary left behind


def test_missing_extra_is_one_line_naming_the_pip_install(
    droid_fsr: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without foxglove-sdk the command exits 2 with one line naming pip install '...[mcap]'."""
    monkeypatch.setitem(sys.modules, "foxglove", None)
    out = tmp_path / "ep.mcap"
    assert main(["export", str(droid_fsr), "--to", "mcap", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "pip install 'fastsim-plugin-record[mcap]'" in err
    assert "foxglove-sdk" in err
    assert not out.exists()


def test_missing_source_and_empty_folder_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A SOURCE that does not exist, or a folder without FSR files, is one line and exit 2."""
    assert main(["export", str(tmp_path / "nope.fsr"), "--to", "mcap", "-o", str(tmp_path / "o.mcap")]) == 2
    assert "nope.fsr: no such file or folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["export", str(tmp_path / "empty"), "--to", "mcap", "-o", str(tmp_path / "o.mcap")]) == 2
    assert "holds no *.fsr file" in capsys.readouterr().err


def test_invalid_source_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is not a sealed FSR file is named with the reason, exit 1, and nothing is written."""
    _needs_mcap()
    bad = tmp_path / "bad.fsr"
    bad.write_bytes(b"not an fsr file at all" * 10)
    assert main(["export", str(bad), "--to", "mcap", "-o", str(tmp_path / "o.mcap")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("invalid: ")
    assert "bad.fsr" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "o.mcap").exists()


def test_folder_of_sources_makes_one_mcap_each(droid_fsr: Path, tmp_path: Path) -> None:
    """A folder SOURCE exports every FSR below it; several sources make OUT a folder of .mcap files."""
    _needs_mcap()
    src = tmp_path / "src"
    (src / "b").mkdir(parents=True)
    shutil.copy(droid_fsr, src / "a.fsr")
    shutil.copy(droid_fsr, src / "b" / "c.fsr")
    out = tmp_path / "out"
    assert main(["export", str(src), "--to", "mcap", "-o", str(out), "--quiet"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["0000-a.mcap", "0001-c.mcap"]


def test_every_target_is_an_exporter_adapter() -> None:
    """Each registered target composes to an object satisfying the Exporter port, or names its extra."""
    for name in TARGETS:
        if all(importlib.util.find_spec(m) for m in _NEEDS[name]):
            made = exporter(name)
            assert isinstance(made, Exporter)
            assert made.name == name
        else:
            with pytest.raises(MissingExtra, match=rf"pip install 'fastsim-plugin-record\[{name}\]'"):
                exporter(name)
