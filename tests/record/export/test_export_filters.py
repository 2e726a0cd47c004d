"""``fsr export``'s default filter, ``--include``, ``--where`` over an index source, and
missing parent folders of OUT (issue 25)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from fastsim_contract.values import CompletionKind
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import Session, run_session
from fastsim_record.cli import main

Capture = pytest.CaptureFixture[str]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two normal episodes (seeds 1, 2) and one stopped after 3 ticks (seed 3)."""
    root = tmp_path_factory.mktemp("filters")
    run = root / "run.yaml"
    run.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "ex", "backend": "synthetic", "scenario": {"scene": {}},
        "runtime": {"sensor_hz": 30.0, "duration_s": 0.3},
        "plugins": {"record": {"use": "plugin://fastsim/record",
                               "config": {"output": {"name": "{name}-seed{seed}-{episode:04d}.fsr"}}}},
    }))
    data = root / "data"
    for seed in (1, 2):
        assert run_session(prepare_run(run, seed=seed, episode=seed - 1, sweep=True), data).outcome.ok
    session = Session.open(prepare_run(run, seed=3, episode=2, sweep=True), data)
    for _ in range(3):
        session.step()
    session.close(CompletionKind.STOPPED, "stopped by the test")
    return data


@pytest.fixture
def folder(recorded: Path, tmp_path: Path) -> Path:
    """A copy of the episodes with ``index.parquet`` inside."""
    copy = tmp_path / "set"
    shutil.copytree(recorded, copy)
    assert main(["index", str(copy), "-o", str(copy / "index.parquet")]) == 0
    return copy


def _exported(out: Path) -> list[str]:
    return sorted(p.name.split("-", 1)[1] for p in out.glob("*.mcap"))


def test_the_default_leaves_out_the_stopped_episode_and_says_so(folder: Path, tmp_path: Path,
                                                                 capsys: Capture) -> None:
    """A folder: the stopped episode is not exported; the summary line names it and the option."""
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["export", str(folder), "--to", "mcap", "-o", str(out), "--quiet"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("exported 2 episode(s) (2 segment(s), ")
    assert line.endswith("; left out 1 of 3 episodes: 1 stopped (--include stopped keeps them)")
    assert _exported(out) == ["ex-seed1-0000.mcap", "ex-seed2-0001.mcap"]


def test_include_stopped_brings_it_back(folder: Path, tmp_path: Path, capsys: Capture) -> None:
    """``--include stopped``: every episode is exported and nothing is left out."""
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["export", str(folder), "--to", "mcap", "-o", str(out), "--include", "stopped", "--quiet"]) == 0
    assert capsys.readouterr().out.strip().endswith("; left out none of 3 episodes")
    assert _exported(out) == ["ex-seed1-0000.mcap", "ex-seed2-0001.mcap", "ex-seed3-0002.mcap"]


def test_an_index_source_with_where_after_the_folder_moved(folder: Path, tmp_path: Path, capsys: Capture) -> None:
    """The index is a SOURCE; ``--where`` filters its rows; a moved folder's index still resolves."""
    moved = tmp_path / "moved"
    shutil.move(str(folder), moved)
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["export", str(moved / "index.parquet"), "--to", "mcap", "-o", str(out), "--quiet",
                 "--include", "stopped", "--where", "seed >= 2 and completion == 'stopped'"]) == 0
    assert capsys.readouterr().out.strip().endswith("(mcap); left out 2 of 3 episodes: 2 by where")
    assert out.is_file()  # one source: OUT is the file itself


@pytest.mark.parametrize(("extra", "message"), [
    (["--where", "sucess"], "fsr export: where: unknown column 'sucess'; did you mean 'success'?\n"),
    (["--where", "seed >"], "fsr export: where: bad syntax in 'seed >': invalid syntax\n"),
    (["--include", "stoped"], "fsr export: include: unknown 'stoped'; did you mean 'stopped'?\n"),
    (["--where", "seed > 5"], "fsr export: nothing to export: left out 3 of 3 episodes: 3 by where\n"),
])
def test_bad_filters_are_one_line(folder: Path, tmp_path: Path, capsys: Capture, extra: list[str],
                                  message: str) -> None:
    """A bad ``--where`` or ``--include``, or nothing left to export: one line, exit 2, nothing written."""
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["export", str(folder / "index.parquet"), "--to", "mcap", "-o", str(out), *extra]) == 2
    assert capsys.readouterr().err == message
    assert not out.exists()


def test_where_needs_an_index_source(folder: Path, tmp_path: Path, capsys: Capture) -> None:
    """``--where`` over a folder: one line saying to give the index."""
    capsys.readouterr()
    assert main(["export", str(folder), "--to", "mcap", "-o", str(tmp_path / "o"), "--where", "success"]) == 2
    assert capsys.readouterr().err.startswith("fsr export: --where filters an episode index's columns")


def test_missing_parent_folders_of_out_are_made(folder: Path, tmp_path: Path, capsys: Capture) -> None:
    """``-o a/b/out`` makes ``a/b``; a parent that is a file (here a source) is one line and stays as it was."""
    out = tmp_path / "a" / "b" / "out.mcap"
    assert main(["export", str(folder / "ex-seed1-0000.fsr"), "--to", "mcap", "-o", str(out), "--quiet"]) == 0
    assert out.is_file()
    blocker = folder / "ex-seed1-0000.fsr"
    before = blocker.read_bytes()
    capsys.readouterr()
    assert main(["export", str(blocker), "--to", "mcap", "-o", str(blocker / "x" / "o.mcap"), "--quiet"]) == 2
    assert capsys.readouterr().err.startswith(f"fsr export: cannot make the folder {blocker / 'x'} for OUT: ")
    assert blocker.read_bytes() == before
