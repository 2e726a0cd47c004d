"""fsr validate / fsr info over many files: one line each, a summary, failures named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastsim_record.cli import main

Capture = pytest.CaptureFixture[str]


def test_validate_many_files_summarises_and_names_each_failure(dataset: Path, capsys: Capture) -> None:
    """Two folders of files: every file checked; exit 1 names only the broken one."""
    bad = dataset / "broken.fsr"
    bad.write_bytes(b"\x00" * 100)
    good = sorted(dataset.glob("batch-test-*.fsr"))
    assert main(["validate", str(good[0]), str(dataset), "--jobs", "2"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("valid: ") == 3
    assert "validated 4 files (structural): 3 valid, 1 failed" in captured.out
    assert f"  {bad}: invalid: " in captured.err
    assert "Traceback" not in captured.err


def test_validate_json_gives_one_object_per_file(dataset: Path, capsys: Capture) -> None:
    """--json: one JSON object per line with the receipt; the summary goes to stderr."""
    assert main(["validate", str(dataset), "--json", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    lines = [json.loads(x) for x in captured.out.splitlines()]
    assert [x["code"] for x in lines] == [0, 0, 0]
    assert all(x["receipt"]["profile"] == "structural" for x in lines)
    assert "3 valid, 0 failed" in captured.err


def test_single_file_output_is_unchanged_and_a_lone_folder_is_a_batch(dataset: Path, capsys: Capture) -> None:
    """One FILE keeps the receipt output; one folder alone is a batch over its files."""
    one = sorted(dataset.glob("*.fsr"))[0]
    assert main(["validate", str(one)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"valid: {one}\n  profile: structural")
    assert main(["validate", str(dataset)]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1] == "validated 3 files (structural): 3 valid, 0 failed"


def test_info_many_files_json_lines_carry_the_path(dataset: Path, capsys: Capture) -> None:
    """fsr info --json over many files prints one summary per line, each with its path."""
    files = sorted(dataset.glob("*.fsr"))
    assert main(["info", "--json", *map(str, files)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["path"] for x in lines] == [str(f) for f in files]
    assert [x["run"]["seed"] for x in lines] == [1, 2, 3]


def test_info_batch_missing_source_is_one_line(dataset: Path, tmp_path: Path, capsys: Capture) -> None:
    """A missing SOURCE among many: one line naming it, exit 2, nothing printed on stdout."""
    assert main(["info", str(dataset), str(tmp_path / "gone.fsr")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == f"fsr info: {tmp_path / 'gone.fsr'}: no such file or folder"


def test_sweep_with_upload_on_the_local_pool_commits_and_uploads(tmp_path: Path, capsys: Capture) -> None:
    """fsr record --episodes 2 --upload file://...: both episodes recorded, verified in the store, indexed."""
    from tests.record.batch.conftest import write_run

    run = write_run(tmp_path, duration=0.2)
    store = tmp_path / "store"
    code = main(["record", str(run), "--episodes", "2", "--jobs", "2", "--output-dir", str(tmp_path / "local"),
                 "--upload", f"file://{store}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 committed, uploaded to file://" in out
    names = sorted(p.name for p in store.iterdir())
    assert names == ["batch-test-seed0-0000.fsr", "batch-test-seed1-0001.fsr", "index.parquet"]
    assert (store / names[0]).read_bytes() == (tmp_path / "local" / names[0]).read_bytes()


def test_sweep_with_upload_refuses_existing_episodes_like_the_host(
    tmp_path: Path, episodes: list[Path], capsys: Capture,
) -> None:
    """The host's name checks run first: an existing episode file is refused, exit 2, nothing uploaded."""
    from tests.record.batch.conftest import write_run

    run = write_run(tmp_path)
    local = tmp_path / "local"
    local.mkdir()
    (local / "batch-test-seed0-0000.fsr").write_bytes(b"mine")
    assert main(["record", str(run), "--episodes", "1", "--output-dir", str(local),
                 "--upload", f"file://{tmp_path / 'store'}"]) == 2
    assert "already exists; refusing to overwrite it" in capsys.readouterr().err
    assert (local / "batch-test-seed0-0000.fsr").read_bytes() == b"mine"
    assert not (tmp_path / "store").exists()


def test_an_unreachable_ray_address_is_one_line_exit_2(episodes: list[Path]) -> None:
    """--ray HOST:PORT with nothing listening: one line naming the address within seconds, exit 2."""
    import socket
    import subprocess
    import sys

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        fsr = str(Path(sys.executable).with_name("fsr"))
        done = subprocess.run([fsr, "validate", str(episodes[0]), "--ray", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == f"fsr validate: --ray: cannot reach Ray at 127.0.0.1:{port}: Connection refused"


def test_info_folder_prints_one_line_per_file_and_a_summary(dataset: Path, capsys: Capture) -> None:
    """fsr info FOLDER: one line per file (completion, seed, segments) and the summary; --verbose: every table."""
    files = sorted(dataset.glob("*.fsr"))
    assert main(["info", str(dataset), "--jobs", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(files) + 1
    for path, line, seed in zip(files, lines, (1, 2, 3)):
        assert line.startswith(f"{path}  normal, seed {seed}, ")
        assert line.endswith(", 1 segment")
    assert lines[-1] == "summarised 3 files: 3 valid, 0 invalid (completion: 3 normal)"
    assert main(["info", str(dataset), "--jobs", "1", "--verbose"]) == 0
    verbose = capsys.readouterr().out.splitlines()
    assert [line for line in verbose if line.startswith("== ")] == [f"== {f}" for f in files]
    assert sum(1 for line in verbose if line.startswith("stream ") and " segments " in line) == 3
    assert len(verbose) > 5 * len(lines)


def test_info_json_names_segments_and_keeps_generations_for_one_release(dataset: Path, capsys: Capture) -> None:
    """Each stream's Runtime segments under `segments`; `generations` still carries the same list."""
    assert main(["info", "--json", str(dataset)]) == 0
    for line in capsys.readouterr().out.splitlines():
        streams = json.loads(line)["streams"]
        assert all(s["segments"] == s["generations"] for s in streams)
        assert any(s["segments"] == [0] for s in streams)
