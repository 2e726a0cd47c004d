"""The documented export rules as pure functions: zero-order hold and generation offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

import fastsim_record as fr
from fastsim_record.export._lerobot_rows import Hold
from fastsim_record.export._source import collect_sources, generation_offsets


def test_hold_is_latest_at_or_before_in_the_generation_else_the_first() -> None:
    """Hold returns the latest sample at or before t in the same generation; before the first, the first; never another generation's."""
    hold = Hold(iter([(0, 10, "a"), (0, 20, "b"), (1, 5, "c"), (1, 30, "d"), (3, 0, "e")]))
    assert hold.at(0, 5) == "a"  # before the first sample of generation 0: the first
    assert hold.at(0, 10) == "a"
    assert hold.at(0, 25) == "b"
    assert hold.at(1, 0) == "c"  # a new generation never holds generation 0's value
    assert hold.at(1, 29) == "c"
    assert hold.at(1, 30) == "d"
    assert hold.at(2, 0) is None  # no sample in generation 2
    assert hold.at(3, 100) == "e"


def test_generation_offsets_keep_time_monotonic(droid_fsr: Path) -> None:
    """Offsets are zero when simulation time continues across a reset (the DROID-like example)."""
    rec = fr.open(droid_fsr)
    assert generation_offsets(rec) == {0: 0, 1: 0}


def test_collect_sources_orders_files_then_folders(tmp_path: Path) -> None:
    """A folder contributes every *.fsr below it, sorted, after the sources named before it."""
    (tmp_path / "d" / "e").mkdir(parents=True)
    for name in ("z.fsr", "d/b.fsr", "d/e/a.fsr", "d/readme.txt"):
        (tmp_path / name).write_bytes(b"")
    got = collect_sources([tmp_path / "z.fsr", tmp_path / "d"])
    assert [p.relative_to(tmp_path).as_posix() for p in got] == ["z.fsr", "d/b.fsr", "d/e/a.fsr"]
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        collect_sources([tmp_path / "missing"])
