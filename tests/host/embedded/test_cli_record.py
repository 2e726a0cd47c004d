"""`fsr record` through the dispatcher, the fastsim.hosts entry point and the embedded host."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fastsim_embedded.backends import register_backend
from fastsim_embedded.backends.base import BackendSpec
from fastsim_embedded.backends.synthetic import SyntheticBackend, create_backend
from fastsim_record.cli import main


def _no_progress(path: Path, *more: str) -> list[str]:
    return ["record", str(path), "--no-progress", *more]


def test_a_run_without_plugins_exits_0(write_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Run with no capture owner simply runs its duration and exits 0."""
    code = main(_no_progress(write_run(plugins={}), "--duration", "0.2", "--output-dir", str(tmp_path / "o")))
    assert code == 0
    assert "0.20 s simulated" in capsys.readouterr().out


def test_invalid_run_file_exits_2_with_one_line_per_issue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A YAML syntax error is one `path: message` line naming line and column; exit 2."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: fastsim/2\nname: [unclosed\n")
    assert main(_no_progress(bad)) == 2
    err = capsys.readouterr().err
    assert "line" in err
    assert "Traceback" not in err


def test_unknown_backend_exits_2(write_run: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    """--backend with an unregistered name is a config error."""
    assert main(_no_progress(write_run(plugins={}), "--backend", "warp-drive")) == 2
    assert capsys.readouterr().err.startswith("backend: unknown backend 'warp-drive'")


def test_a_failed_run_exits_1_with_a_one_line_reason(
    write_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A simulation failure exits 1 with the reason on one line and no traceback."""
    class Exploding(SyntheticBackend):
        def step(self, substeps: int) -> None:
            raise RuntimeError("solver diverged\nwith detail on a second line")

    def exploding(spec: BackendSpec) -> Exploding:
        base = create_backend(spec)
        return Exploding(base.spec, base.entities, base.n_channels, base.dof, None, None, None)

    register_backend("exploding", exploding)
    code = main(_no_progress(write_run(plugins={}, backend="exploding"), "--output-dir", str(tmp_path / "o")))
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1
    assert "solver diverged" in err
    assert "Traceback" not in err


def test_record_is_listed_by_the_dispatcher(capsys: pytest.CaptureFixture[str]) -> None:
    """`fsr record --help` shows the host's options."""
    with pytest.raises(SystemExit) as caught:
        main(["record", "--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    for option in ("--output-dir", "--duration", "--backend"):
        assert option in out


def test_invalid_component_config_exits_2_naming_the_field(
    write_run: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A Record config the catalog rejects is reported as `plugins.record.config...: message`."""
    plugins = {"record": {"use": "plugin://fastsim/record", "config": {"integrity": "bogus"}}}
    assert main(_no_progress(write_run(plugins=plugins))) == 2
    err = capsys.readouterr().err
    assert err.startswith("plugins.record.config.integrity:")
    assert "Traceback" not in err


def test_a_recorded_run_exits_0_commits_the_named_file_and_prints_the_summary(
    write_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With Record selected: exit 0, DIR/<output.name> committed, the short summary by default, the full table with --verbose."""
    plugins = {"record": {"use": "plugin://fastsim/record", "config": {"output": {"name": "cli.fsr"}}}}
    out_dir = tmp_path / "o"
    code = main(_no_progress(write_run(plugins=plugins), "--duration", "1", "--output-dir", str(out_dir)))
    short = capsys.readouterr().out
    assert code == 0
    assert sorted(p.name for p in out_dir.iterdir()) == ["cli.fsr"]
    assert short.count("\n") == 1
    for fact in (f"committed {out_dir / 'cli.fsr'}", "completion normal", "1.00 s simulated", "s wall",
                 "real time", "KiB", "60 records", "no loss"):
        assert fact in short
    assert "lanes." not in short
    code = main(_no_progress(write_run(plugins=plugins), "--duration", "1", "--output-dir", str(out_dir),
                             "--overwrite", "--verbose"))
    out = capsys.readouterr().out
    assert code == 0
    for key in ("payload_bytes", "batch_elapsed_s", "finalize_elapsed_s", "readback_elapsed_s"):
        assert key in out
    for lane in ("critical", "numeric"):
        for counter in ("capacity_items", "depth", "high_water", "enqueued", "dequeued", "lost", "failures",
                        "degradations"):
            assert f"lanes.{lane}.{counter}" in out
    assert "lanes.media" not in out  # no cameras selected: no media lane
    assert main(["info", str(out_dir / "cli.fsr"), "--json"]) == 0
    info = capsys.readouterr().out
    assert '"observations"' in info
    assert '"lifecycle"' in info


def test_a_failed_recorded_run_exits_1_and_leaves_nothing_under_the_final_name(
    write_run: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Record run that fails (required numeric overflow) exits 1 with one line and no file under the final name."""
    plugins = {"record": {"use": "plugin://fastsim/record", "config": {
        "output": {"name": "fail.fsr"},
        "queues": {"numeric": {"max_items": 1, "max_bytes": 1, "overload": "fail_run"}},
    }}}
    out_dir = tmp_path / "o"
    code = main(_no_progress(write_run(plugins=plugins), "--duration", "1", "--output-dir", str(out_dir)))
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("fsr record: run failed: ")
    assert "overflow" in err.splitlines()[0]
    assert "Traceback" not in err
    assert not (out_dir / "fail.fsr").exists()


def test_run_errors_do_not_hide_plugin_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad Run field and a bad Record field are both reported by `fsr record`, exit 2."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "schema: fastsim/2\nname: ''\nbackend: synthetic\nscenario: {}\n"
        "plugins:\n  record:\n    use: plugin://fastsim/record\n"
        "    config: {integrity: nonsense}\n"
    )
    assert main(_no_progress(bad, "--output-dir", str(tmp_path / "o"))) == 2
    err = capsys.readouterr().err
    assert err.startswith("name: ")
    assert "plugins.record.config.integrity: " in err
    assert "Traceback" not in err
