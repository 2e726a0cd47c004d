"""``Dataset`` over an episode index (issue 25): ``where``, the default filter and
``include``, error rows, and an index that moved with its folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml

import fastsim_record as fr
from fastsim_contract.values import CompletionKind
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import Session, run_session
from fastsim_record.cli import main
from fastsim_recording_format import recover
from fastsim_recording_format.reading import BadArgument
from fastsim_recording_format.reading._sources import LeftOutWarning

JOINTS = "robot.joint_position"


def _run(folder: Path) -> Path:
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "ds", "backend": "synthetic", "scenario": {"scene": {}},
        "runtime": {"sensor_hz": 30.0, "duration_s": 0.3},
        "plugins": {"record": {"use": "plugin://fastsim/record",
                               "config": {"output": {"name": "{name}-seed{seed}-{episode:04d}.fsr"}}}},
    }))
    return path


@pytest.fixture(scope="module")
def episodes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``data/``: two normal episodes (seeds 1, 2), one stopped after 3 ticks (seed 3) and
    one recovered from a torn copy of seed 1 (no completion; degraded, as every recovered file)."""
    root = tmp_path_factory.mktemp("manifest")
    run, data = _run(root), root / "data"
    for seed in (1, 2):
        assert run_session(prepare_run(run, seed=seed, episode=seed - 1, sweep=True), data).outcome.ok
    session = Session.open(prepare_run(run, seed=3, episode=2, sweep=True), data)
    for _ in range(3):
        session.step()
    session.close(CompletionKind.STOPPED, "stopped by the test")
    whole = (data / "ds-seed1-0000.fsr").read_bytes()
    torn = root / "ds-seed9-0009.fsr.incomplete"
    torn.write_bytes(whole[: len(whole) * 2 // 3])
    recover(torn, data / "ds-seed9-0009.fsr")
    return data


@pytest.fixture
def indexed(episodes: Path, tmp_path: Path) -> Path:
    """A copy of the episodes with ``index.parquet`` inside the folder."""
    folder = tmp_path / "set"
    shutil.copytree(episodes, folder)
    assert main(["index", str(folder), "-o", str(folder / "index.parquet")]) == 0
    return folder / "index.parquet"


def _names(ds: fr.Dataset) -> list[str]:
    return [Path(p).name for p in ds.paths]


def test_the_default_filter_leaves_out_stopped_and_degraded_files_and_says_so(episodes: Path) -> None:
    """Only normal, non-degraded episodes; ``left_out`` and a one-line warning say what and why."""
    with pytest.warns(LeftOutWarning) as caught:
        ds = fr.Dataset(episodes, channels=[JOINTS])
    assert _names(ds) == ["ds-seed1-0000.fsr", "ds-seed2-0001.fsr"]
    assert ds.left_out == {"stopped": 1, "degraded": 1}
    (warning,) = caught
    assert str(warning.message) == ("left out 2 of 4 episodes: 1 stopped, 1 degraded "
                                    "(include='stopped,degraded' keeps them)")


def test_include_brings_them_back(episodes: Path) -> None:
    """``include='stopped'`` keeps the stopped file; ``degraded`` the recovered one."""
    with pytest.warns(LeftOutWarning, match=r"left out 1 of 4 episodes: 1 degraded \(include='degraded' keeps them\)"):
        ds = fr.Dataset(episodes, channels=[JOINTS], include="stopped")
    assert "ds-seed3-0002.fsr" in _names(ds)
    assert ds.left_out == {"degraded": 1}
    with pytest.warns(LeftOutWarning, match=r"1 stopped \(include='stopped' keeps them\)"):
        recovered = fr.Dataset(episodes, channels=[JOINTS], include=["degraded"])
    assert "ds-seed9-0009.fsr" in _names(recovered)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left out: no warning
        everything = fr.Dataset(episodes, channels=[JOINTS], include="all")
    assert len(everything.paths) == 4
    assert everything.left_out == {}
    with pytest.raises(BadArgument, match="include: unknown 'stoped'; did you mean 'stopped'"):
        fr.Dataset(episodes, channels=[JOINTS], include="stoped")


def test_an_index_gives_the_same_files_and_where_filters_its_rows(episodes: Path, indexed: Path) -> None:
    """The index and the folder give the same files; a string and a pyarrow expression the same rows."""
    with pytest.warns(LeftOutWarning):
        by_folder = fr.Dataset(episodes, channels=[JOINTS])
    with pytest.warns(LeftOutWarning):
        by_index = fr.Dataset(indexed, channels=[JOINTS])
    assert _names(by_index) == _names(by_folder)
    assert len(by_index) == len(by_folder)
    with pytest.warns(LeftOutWarning, match="2 by where"):
        text = fr.Dataset(indexed, channels=[JOINTS], where="seed >= 2 and completion != 'failed'", include="stopped")
    with pytest.warns(LeftOutWarning, match="2 by where"):
        expr = fr.Dataset(indexed, channels=[JOINTS],
                          where=(pc.field("seed") >= 2) & (pc.field("completion") != "failed"), include="stopped")
    assert _names(text) == _names(expr) == ["ds-seed2-0001.fsr", "ds-seed3-0002.fsr"]
    assert text.left_out == expr.left_out == {"where": 2}  # seed 1 and the recovered file (its seed is 9)
    with pytest.warns(LeftOutWarning, match=r"left out 3 of 4 episodes: 2 by where, 1 stopped"):
        only = fr.Dataset(indexed, channels=[JOINTS], where="seed >= 2")
    assert _names(only) == ["ds-seed2-0001.fsr"]


def test_a_moved_folder_still_loads_through_its_index(indexed: Path, tmp_path: Path) -> None:
    """Index paths below the index are relative: move the folder, the index still finds every file."""
    stored = pq.read_table(indexed).column("path").to_pylist()
    assert stored == ["ds-seed1-0000.fsr", "ds-seed2-0001.fsr", "ds-seed3-0002.fsr", "ds-seed9-0009.fsr"]
    moved = tmp_path / "elsewhere" / "set"
    moved.parent.mkdir()
    shutil.move(str(indexed.parent), moved)
    ds = fr.Dataset(moved / "index.parquet", channels=[JOINTS], include="all")
    assert [Path(p).parent for p in ds.paths] == [moved] * 4
    assert len(ds) > 0
    assert ds[0][JOINTS].shape == (7,)


def test_rows_with_an_error_are_skipped_and_counted(indexed: Path) -> None:
    """A file that failed validation is a row with an error: left out and counted, never read."""
    (indexed.parent / "broken.fsr").write_bytes(b"FSR" + b"\0" * 200)
    assert main(["index", str(indexed.parent), "-o", str(indexed)]) == 1
    with pytest.warns(LeftOutWarning, match=r"left out 3 of 5 episodes: 1 error, 1 stopped, 1 degraded"):
        ds = fr.Dataset(indexed, channels=[JOINTS])
    assert ds.left_out == {"error": 1, "stopped": 1, "degraded": 1}
    assert len(ds.paths) == 2


@pytest.mark.parametrize(("where", "message"), [
    ("sucess", r"^where: unknown column 'sucess'; did you mean 'success'\?$"),
    ("seed >", r"^where: bad syntax( at column \d+)? in 'seed >': invalid syntax$"),
    ("__import__('os').system('x')", r"^where: .* is not supported in "),
    ("seed + 1 > 2", r"^where: 'seed \+ 1' is not supported in "),
    ("completion == 5", r"^where: cannot apply 'completion == 5': "),
])
def test_a_bad_where_is_one_line(indexed: Path, where: str, message: str) -> None:
    """An unknown column, bad syntax, anything but comparisons: one ``BadArgument`` line, nothing evaluated."""
    with pytest.raises(BadArgument, match=message) as caught:
        fr.Dataset(indexed, channels=[JOINTS], where=where)
    assert "\n" not in str(caught.value)


def test_where_needs_an_index_and_a_non_index_parquet_is_refused(episodes: Path, tmp_path: Path) -> None:
    """``where`` over plain files, or a Parquet file without the index metadata: one line each."""
    with pytest.raises(BadArgument, match="where filters an episode index's columns"):
        fr.Dataset(episodes, channels=[JOINTS], where="success")
    import pyarrow as pa

    pq.write_table(pa.table({"path": ["a.fsr"]}), tmp_path / "other.parquet")
    with pytest.raises(BadArgument, match=r"other\.parquet: not an episode index \(no 'fsr-index' metadata"):
        fr.Dataset(tmp_path / "other.parquet", channels=[JOINTS])


def test_an_index_without_pyarrow_is_one_line_naming_the_extra(indexed: Path) -> None:
    """Without pyarrow, ``Dataset(index)`` raises one ``ImportError`` line naming the arrow extra."""
    script = ("import sys; sys.modules['pyarrow'] = None\n"
              "import fastsim_record as fr\n"
              f"try:\n    fr.Dataset({str(indexed)!r}, channels=['x'])\n"
              "except ImportError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == (f"{indexed}: reading an episode index needs pyarrow: "
                                  "pip install 'fastsim-recording-format[arrow]'")
