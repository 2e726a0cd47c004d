"""The FastSim v2 Run document: parsing, YAML errors, the output policy, the compiler."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastsim_contract.run import (
    RunOutputPolicy,
    load_run,
    parse_run,
    run_from_mapping,
    run_to_mapping,
)
from fastsim_contract.run_compiler import compile_run, load_and_compile
from fastsim_contract.run_errors import RunConfigError
from fastsim_contract.run_structure import without_paths
from fastsim_record import COMPONENT_ID
from fastsim_record.config.catalog import CATALOG

from .helpers import compile_mapping, run_mapping

MINIMAL = """\
schema: fastsim/2
name: recorded-run
backend: isaaclab

scenario:
  scene:
    robots:
      robot:
        use: robot://example/robot

plugins:
  record:
    use: plugin://fastsim/record
"""


def _issues(text: str, source: str = "run.yaml") -> list[str]:
    with pytest.raises(RunConfigError) as info:
        parse_run(text, source=source)
    return [str(i) for i in info.value.issues]


def test_minimal_run_parses_with_runtime_defaults() -> None:
    """The README's minimal Run parses; runtime and output policy take their defaults."""
    run = parse_run(MINIMAL)
    assert (run.schema, run.name, run.backend) == ("fastsim/2", "recorded-run", "isaaclab")
    assert run.scenario == {"scene": {"robots": {"robot": {"use": "robot://example/robot"}}}}
    assert run.plugin("record").use == COMPONENT_ID
    assert run.plugin("record").config == {}
    assert (run.runtime.sensor_hz, run.runtime.rate_policy) == (120.0, "exact")
    assert run.runtime.output == RunOutputPolicy("none", preserve_incomplete=True, publish_incomplete=False)


def test_output_policy_is_authored_under_runtime_output() -> None:
    """runtime.output carries the Core RunOutputPolicy fields."""
    run = parse_run(MINIMAL + "runtime:\n  sensor_hz: 15\n  rate_policy: nearest_tick\n"
                    "  output: {integrity: sha256, preserve_incomplete: false, publish_incomplete: true}\n")
    assert run.runtime.sensor_hz == 15.0
    assert run.runtime.rate_policy == "nearest_tick"
    assert run.runtime.output == RunOutputPolicy("sha256", preserve_incomplete=False, publish_incomplete=True)


def test_yaml_syntax_error_names_line_and_column() -> None:
    """A YAML syntax error is one line naming the file, line and column."""
    assert _issues("schema: fastsim/2\nname: [a\nbackend: x\n") == [
        "run.yaml: YAML syntax error at line 3, column 8: expected ',' or ']', but got ':'"
    ]


def test_duplicate_key_is_rejected_with_its_position() -> None:
    """A duplicate mapping key is an error, not a silent overwrite."""
    assert _issues("schema: fastsim/2\nname: a\nname: b\n") == [
        "run.yaml: YAML syntax error at line 3, column 1: duplicate key 'name'"
    ]


def test_document_must_be_a_mapping() -> None:
    """A Run that is not a YAML mapping is one clear line."""
    assert _issues("- a\n- b\n") == ["run.yaml: a Run must be a YAML mapping (got a list)"]


def test_every_run_level_error_is_reported_with_its_path() -> None:
    """Several Run-level errors are all reported, each `path: message`."""
    text = (
        "schema: fastsim/1\nname: ''\nbackend: 3\n"
        "runtime: {sensor_hz: 0, rate_polcy: exact, output: {integrity: md5}}\n"
        "plugins: {rec: {usee: plugin://fastsim/record}}\nplugin: {}\n"
    )
    assert _issues(text) == [
        "schema: must be 'fastsim/2' (got 'fastsim/1')",
        "name: must not be empty",
        "backend: must be a string (got 3)",
        "runtime.sensor_hz: must be a positive number (got 0.0)",
        "runtime.output.integrity: must be one of 'none', 'sha256' (got 'md5')",
        "runtime.rate_polcy: unknown key; did you mean 'rate_policy'?",
        "plugins.rec.use: is required",
        "plugins.rec.usee: unknown key; did you mean 'use'?",
        "plugin: unknown key; did you mean 'plugins'?",
    ]


def test_use_must_be_a_component_uri() -> None:
    """plugins.<alias>.use names a component URI."""
    assert _issues("schema: fastsim/2\nname: a\nbackend: b\nplugins: {r: {use: record}}\n") == [
        "plugins.r.use: must be a component URI such as 'plugin://fastsim/record' (got 'record')"
    ]


def test_unreadable_run_file_is_one_issue(tmp_path: Path) -> None:
    """A missing Run file is reported as one line, not an OSError."""
    missing = tmp_path / "missing.yaml"
    with pytest.raises(RunConfigError) as info:
        load_run(missing)
    assert str(info.value) == f"{missing}: cannot read the Run file: No such file or directory"


def test_run_round_trips_through_plain_data() -> None:
    """run_to_mapping is the inverse of run_from_mapping."""
    run = parse_run(MINIMAL)
    assert run_from_mapping(run_to_mapping(run), source=run.source) == run


def test_unknown_component_suggests_the_installed_one() -> None:
    """A `use:` no installed catalog provides is reported with the nearest component."""
    data = run_mapping()
    data["plugins"]["record"]["use"] = "plugin://fastsim/recrd"
    with pytest.raises(RunConfigError) as info:
        compile_mapping(data)
    assert str(info.value) == (
        "plugins.record.use: no installed component provides it; did you mean 'plugin://fastsim/record'?"
    )


def test_compiled_run_pins_the_selected_version() -> None:
    """A new compilation selects 0.3.12 and the compiled lock pins it."""
    compiled = compile_mapping(run_mapping())
    assert compiled.component("record").version == "0.3.12"
    assert compiled.lock.components == {COMPONENT_ID: "0.3.12"}


def test_compile_run_discovers_the_catalog_through_entry_points() -> None:
    """Without explicit catalogs, compile_run finds Record through fastsim.components."""
    compiled = compile_run(parse_run(MINIMAL))
    assert compiled.component("record").manifest == CATALOG.manifest("0.3.12")


def test_core_finds_the_catalog_only_under_fastsim_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog counts under its own entry-point name, `fastsim.record`; under `record` Core does not find it."""
    import fastsim_contract.run_compiler as run_compiler

    class _EntryPoint:
        def __init__(self, name: str) -> None:
            self.name = name

        def load(self) -> object:
            return CATALOG

    assert run_compiler.entry_point_name(COMPONENT_ID) == "fastsim.record"
    monkeypatch.setattr(run_compiler, "entry_points", lambda **_: (_EntryPoint("fastsim.record"),))
    assert run_compiler.discover_catalogs() == {COMPONENT_ID: CATALOG}
    monkeypatch.setattr(run_compiler, "entry_points", lambda **_: (_EntryPoint("record"),))
    assert run_compiler.discover_catalogs() == {}


def _load_issues(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(RunConfigError) as info:
        load_and_compile(path, {COMPONENT_ID: CATALOG})
    return [str(i) for i in info.value.issues]


CAMERA_Q0 = "{overview: {rgb: a, intrinsics: b, translation: c, quaternion_xyzw: d, quality: 0}}"


def test_run_level_and_component_issues_are_reported_together(tmp_path: Path) -> None:
    """A Run with document errors still has its Record config checked; every issue is listed."""
    text = (
        "schema: fastsim/2\nname: ''\nbackend: b\nruntime: {sensor_hz: 0}\n"
        "plugins:\n  bad: {usee: x}\n  worse: {use: nope}\n"
        f"  record: {{use: plugin://fastsim/record, config: {{streams: {{cameras: {CAMERA_Q0}}}, zzz: 1}}}}\n"
    )
    assert _load_issues(tmp_path, text) == [
        "name: must not be empty",
        "runtime.sensor_hz: must be a positive number (got 0.0)",
        "plugins.bad.use: is required",
        "plugins.bad.usee: unknown key; did you mean 'use'?",
        "plugins.worse.use: must be a component URI such as 'plugin://fastsim/record' (got 'nope')",
        "plugins.record.config.streams.cameras.overview.quality: must be an integer from 1 through 100 (got 0)",
        "plugins.record.config.zzz: unknown key; valid keys are 'batching', 'finalize', 'integrity',"
        " 'output', 'queues', 'streams'",
    ]


def test_component_rules_do_not_guess_a_broken_runtime(tmp_path: Path) -> None:
    """With runtime.output itself invalid, the integrity rule is not judged against its default."""
    text = (
        "schema: fastsim/2\nname: a\nbackend: b\nruntime: {output: {integrity: sha265}}\n"
        "plugins: {record: {use: plugin://fastsim/record, config: {integrity: fast, batching: {max_items: 0}}}}\n"
    )
    assert _load_issues(tmp_path, text) == [
        "runtime.output.integrity: must be one of 'none', 'sha256' (got 'sha265')",
        "plugins.record.config.batching.max_items: must be a positive integer (got 0)",
    ]


def test_component_is_not_checked_against_a_guessed_version(tmp_path: Path) -> None:
    """With the lock itself invalid, the config is not judged against the latest schema."""
    text = (
        "schema: fastsim/2\nname: a\nbackend: b\nlock: {components: {plugin://fastsim/record: 7}}\n"
        "plugins: {record: {use: plugin://fastsim/record, config: {finalize: {postprocessors: {v: {}}}}}}\n"
    )
    assert _load_issues(tmp_path, text) == ["lock.components.plugin://fastsim/record: must be a string (got 7)"]


def test_load_and_compile_valid_run(tmp_path: Path) -> None:
    """A valid Run file compiles exactly as load_run + compile_run."""
    path = tmp_path / "run.yaml"
    path.write_text(MINIMAL)
    catalogs = {COMPONENT_ID: CATALOG}
    assert load_and_compile(path, catalogs) == compile_run(load_run(path), catalogs)


def test_unknown_component_lists_the_installed_ones() -> None:
    """A `use:` far from every installed component lists the installed ones."""
    data = run_mapping()
    data["plugins"]["record"]["use"] = "sim://acme/teleport"
    with pytest.raises(RunConfigError) as info:
        compile_mapping(data)
    assert str(info.value) == (
        "plugins.record.use: no installed component provides it; installed components are"
        " 'plugin://fastsim/record'"
    )


def test_without_paths_removes_each_reported_key_once() -> None:
    """Reported keys go; a missing required key takes its parent; a removed ancestor stops the walk."""
    data = {"a": {"b": 1, "c": 2}, "p": {"x": {"usee": 1}, "y": {"use": 2}}}
    assert without_paths(data, ["a.b", "p.x.use", "p.x.usee", "q.r"]) == {"a": {"c": 2}, "p": {"y": {"use": 2}}}
    assert data["p"] == {"x": {"usee": 1}, "y": {"use": 2}}
