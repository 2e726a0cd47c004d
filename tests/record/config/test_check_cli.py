"""`fsr check RUN.yaml` and the README example Runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from fastsim_contract import run as run_module
from fastsim_contract.run import load_run
from fastsim_contract.run_compiler import compile_run
from fastsim_record.cli import main
from fastsim_record.config import RecordConfig, record_configs

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ["minimal", "observations-none", "render-once", "geometry", "full", "png-cameras"]
SHIPPED = [*EXAMPLES, "render-replay", "droid-like", "sweep", "shapes", "shapes-replay", "policy",
           "training"]
SCRIPTED = ["gym"]  # Python examples, not Runs: tests/record/gym/test_example.py runs them


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["check", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_shipped_example_is_tested() -> None:
    """Every directory under examples/ is in the compile test or a scripted test (a new example cannot slip by)."""
    assert sorted(p.name for p in (ROOT / "examples").iterdir() if p.is_dir()) == sorted([*SHIPPED, *SCRIPTED])


@pytest.mark.parametrize("name", SHIPPED)
def test_every_readme_example_compiles(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each example Run compiles and `fsr check` prints its effective config, exit 0."""
    path = ROOT / "examples" / name / "run.yaml"
    compiled = compile_run(load_run(path))
    assert list(record_configs(compiled)) == ["record"]
    code, out, err = _check(path, capsys)
    assert (code, err) == (0, "")
    assert out.startswith("# plugins.record.config (plugin://fastsim/record 0.3.12)\n")
    assert yaml.safe_load(out) == compiled.component("record").effective_config()


def test_acceptance_gate_config_compiles(capsys: pytest.CaptureFixture[str]) -> None:
    """The DROID joint-state gate's Run selects both joint channels explicitly and compiles."""
    path = ROOT / "acceptance" / "configs" / "record-droid-joint-state-explicit.yaml"
    code, _, err = _check(path, capsys)
    assert (code, err) == (0, "")
    include = record_configs(compile_run(load_run(path)))["record"].streams.observations.include
    assert sorted(c.channel for c in include.values()) == ["robot.joint_position", "robot.joint_velocity"]


def test_examples_show_what_the_readme_configures() -> None:
    """The examples carry the README's distinguishing settings."""
    def cfg(name: str) -> RecordConfig:
        return record_configs(compile_run(load_run(ROOT / "examples" / name / "run.yaml")))["record"]

    assert cfg("minimal") == RecordConfig()
    assert cfg("observations-none").streams.observations.mode == "none"
    render = cfg("render-once")
    assert (render.output.name, render.streams.render_state.enabled, render.streams.render_state.rate_hz) == (
        "source.fsr", True, 30.0)
    assert cfg("geometry").streams.geometry.enabled is True
    full = cfg("full")
    assert full.streams.observations.include["joints"].channel == "robot.joint_position"
    assert (full.streams.cameras["overview"].encoding, full.streams.cameras["overview"].quality) == ("jpeg", 92)
    assert cfg("png-cameras").streams.cameras["overview"].encoding == "png"


def test_check_reports_every_issue_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid Run prints one `path: message` line per issue on stderr, exit 2."""
    run = tmp_path / "run.yaml"
    run.write_text(
        "schema: fastsim/2\nname: r\nbackend: synthetic\nplugins:\n  record:\n"
        "    use: plugin://fastsim/record\n    config:\n"
        "      streams: {cameras: {overview: {rgb: a, intrinsics: b, translation: c,"
        " quaternion_xyzw: d, quality: 0}}}\n      finalize: {postprocessors: {video: {}}}\n"
    )
    code, out, err = _check(run, capsys)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "plugins.record.config.streams.cameras.overview.quality: must be an integer from 1 through 100 (got 0)",
        "plugins.record.config.finalize.postprocessors: must be empty: Record produces only the"
        " primary FSR artifact (got 1 entry)",
    ]


def test_check_yaml_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A YAML syntax error names line and column, exit 2, no traceback."""
    run = tmp_path / "bad.yaml"
    run.write_text("schema: fastsim/2\nplugins:\n  record: {use: plugin://fastsim/record\n")
    code, out, err = _check(run, capsys)
    assert (code, out) == (2, "")
    assert err == f"{run}: YAML syntax error at line 4, column 1: expected ',' or '}}', but got '<stream end>'\n"
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "text",
    ["", "42\n", "schema: fastsim/2\n", "\x00\x01", "plugins: [1, 2]\n", "schema: {a: [b, {c: !!python/object x}]}\n"],
)
def test_check_never_shows_a_traceback(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Garbage input exits 2 with one-line messages, never a traceback."""
    run = tmp_path / "run.yaml"
    run.write_text(text)
    code, out, err = _check(run, capsys)
    assert (code, out) == (2, "")
    assert err
    assert "Traceback" not in err
    assert all(": " in line for line in err.splitlines())


def test_check_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing file exits 2 with one line."""
    code, _, err = _check(tmp_path / "nope.yaml", capsys)
    assert code == 2
    assert err == f"{tmp_path / 'nope.yaml'}: cannot read the Run file: No such file or directory\n"


def test_check_without_record_plugin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A valid Run that does not select Record exits 2 saying so."""
    run = tmp_path / "run.yaml"
    run.write_text("schema: fastsim/2\nname: r\nbackend: synthetic\n")
    code, _, err = _check(run, capsys)
    assert (code, err) == (2, "plugins: no plugin entry uses plugin://fastsim/record\n")


def test_check_prints_every_record_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two Record entries print as two YAML documents, lock honoured; the embedded host, which takes one capture owner, still refuses the Run (exit 2)."""
    run = tmp_path / "run.yaml"
    run.write_text(
        "schema: fastsim/2\nname: r\nbackend: synthetic\nplugins:\n"
        "  source: {use: plugin://fastsim/record, config: {output: {name: a.fsr}}}\n"
        "  render: {use: plugin://fastsim/record, config: {output: {name: b.fsr}}}\n"
        "lock: {components: {plugin://fastsim/record: 0.3.8}}\n"
    )
    code, out, err = _check(run, capsys)
    assert code == 2
    assert err == "plugins.render: only one sole ordered capture owner per Run (also 'source')\n"
    docs = list(yaml.safe_load_all(out))
    assert [d["output"]["name"] for d in docs] == ["a.fsr", "b.fsr"]
    assert "# plugins.render.config (plugin://fastsim/record 0.3.8)" in out
    assert "render_state" in docs[0]["streams"]
    assert "geometry" not in docs[0]["streams"]  # added in 0.3.12: not in the 0.3.8 schema


def test_check_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory given as the Run file is one line, exit 2."""
    code, out, err = _check(tmp_path, capsys)
    assert (code, out, err) == (2, "", f"{tmp_path}: cannot read the Run file: Is a directory\n")


def test_check_fifo_is_refused_without_blocking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A FIFO given as the Run file is refused at once (no writer needed), exit 2."""
    fifo = tmp_path / "run.yaml"
    os.mkfifo(fifo)
    code, out, err = _check(fifo, capsys)
    assert (code, out, err) == (2, "", f"{fifo}: cannot read the Run file: not a regular file\n")


def test_check_device_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """A character device such as /dev/zero (endless) is refused by its type, exit 2."""
    code, out, err = _check(Path("/dev/zero"), capsys)
    assert (code, out, err) == (2, "", "/dev/zero: cannot read the Run file: not a regular file\n")


def test_check_oversized_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Run file over the size limit is refused by its size before it is read, exit 2."""
    monkeypatch.setattr(run_module, "MAX_RUN_BYTES", 64)
    run = tmp_path / "run.yaml"
    run.write_text("schema: fastsim/2\n" + "# padding\n" * 10)
    code, out, err = _check(run, capsys)
    assert (code, out) == (2, "")
    assert err == f"{run}: cannot read the Run file: 118 bytes is over the 64-byte limit for a Run\n"


def test_check_binary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A binary (non-UTF-8) file is one line naming the byte position, exit 2."""
    run = tmp_path / "run.fsr"
    run.write_bytes(b"FSR\x00\xd0\x01\xff")
    code, out, err = _check(run, capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"{run}: cannot read the Run file: 'utf-8' codec can't decode byte 0xd0 in position 4")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "{run}: a Run must be a YAML mapping (got null)"),
        ("- a\n- b\n", "{run}: a Run must be a YAML mapping (got a list)"),
        ("just text\n", "{run}: a Run must be a YAML mapping (got 'just text')"),
        ("schema: fastsim/2\nname: a\nbackend: b\nplugins: 3\n", "plugins: must be a mapping (got 3)"),
        ("schema: fastsim/2\nname: a\nbackend: b\nplugins: {record: [x]}\n",
         "plugins.record: must be a mapping (got a list)"),
        ("schema: fastsim/2\nname: a\nbackend: b\nplugins: {record: {use: plugin://fastsim/record, config: [1]}}\n",
         "plugins.record.config: must be a mapping (got a list)"),
        ("schema: fastsim/2\nname: a\nbackend: b\nplugins: {3: {use: plugin://fastsim/record}}\n",
         "plugins.3: keys must be strings (got 3)"),
        ("schema: fastsim/2\nname: a\nbackend: b\nplugins: {record: {use: plugin://fastsim/record, config: {~: 1}}}\n",
         "plugins.record.config.null: keys must be strings (got null)"),
        ("schema: fastsim/2\nname: a\nbackend: b\nplugins: {record: {use: plugin://fastsim/record}}\nlock: [1]\n",
         "lock: must be a mapping (got a list)"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "{run}: YAML nesting is too deep to load"),
        ("a: &x [*x]\n", "a: unknown key; valid keys are 'backend', 'lock', 'name', 'plugins', 'runtime',"
                         " 'scenario', 'schema'"),
    ],
)
def test_check_malformed_documents_exact_lines(
    text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Malformed Runs (empty, top-level list, non-mapping plugins/config/lock) name the place, exit 2."""
    run = tmp_path / "run.yaml"
    run.write_text(text)
    code, out, err = _check(run, capsys)
    assert (code, out) == (2, "")
    assert expected.format(run=run) in err.splitlines()


def test_the_plugin_readmes_minimal_run_says_isaaclab_needs_the_real_core(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`fsr check` on the plugin README's exact minimal Run (backend isaaclab): one line naming this host's backends."""
    from fastsim_embedded.backends import backend_names

    fixture = ROOT / "tests" / "fixtures" / "runs" / "plugin-readme-minimal.yaml"
    assert "backend: isaaclab\n" in fixture.read_text()
    code, out, err = _check(fixture, capsys)
    assert code == 2
    assert "# plugins.record.config (plugin://fastsim/record 0.3.12)" in out
    assert err == (
        "backend: 'isaaclab' needs the real FastSim Core; this embedded host has the backends "
        + ", ".join(backend_names()) + "\n"
    )
    assert "synthetic" in backend_names()
    # the repository's own minimal example stays on a backend this host has
    assert "backend: synthetic" in (ROOT / "examples" / "minimal" / "run.yaml").read_text()
