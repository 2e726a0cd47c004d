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
from fastsim_contract.run_compiler import compile_run
from fastsim_contract.run_errors import RunConfigError
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
