"""What `fsr check` accepts, `fsr record` can honour: upper bounds, and output names checked at compile time."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fastsim_record.cli import main


def _check(tmp_path: Path, config: dict[str, object]) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "bounds", "backend": "synthetic",
        "plugins": {"record": {"use": "plugin://fastsim/record", "config": config}},
    }))
    return path


@pytest.mark.parametrize(("config", "line"), [
    ({"batching": {"max_sim_duration_s": 1e-12}},
     "plugins.record.config.batching.max_sim_duration_s: must be at least 0.001 (got 1e-12)"),
    ({"batching": {"max_sim_duration_s": 1e308}},
     "plugins.record.config.batching.max_sim_duration_s: must be at most 3600 (got 1e+308)"),
    ({"batching": {"max_items": 10**9}}, "plugins.record.config.batching.max_items: must be at most 65536"),
    ({"batching": {"max_bytes": 2**40}}, "plugins.record.config.batching.max_bytes: must be at most 1073741824"),
    ({"queues": {"media": {"max_items": 2**30, "max_bytes": 1024}}},
     "plugins.record.config.queues.media.max_items: must be at most 1048576"),
    ({"queues": {"media": {"max_items": 8, "max_bytes": 2**50}}},
     "plugins.record.config.queues.media.max_bytes: must be at most 17179869184"),
    ({"finalize": {"requested_timeout_s": 1e9}},
     "plugins.record.config.finalize.requested_timeout_s: must be at most 3600"),
])
def test_limits_the_machine_cannot_honour_fail_fsr_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, object], line: str
) -> None:
    """A lane, batch or finalizer limit out of range is a `path: message` line from fsr check, exit 2."""
    assert main(["check", str(_check(tmp_path, config))]) == 2
    assert capsys.readouterr().err.startswith(line)


@pytest.mark.parametrize(("name", "fragment"), [
    ("a\nb.fsr", "contains a control character ('\\n')"),
    ("a\rb.fsr", "contains a control character ('\\r')"),
    ("a\tb.fsr", "contains a control character ('\\t')"),
    ("a\x07b.fsr", "contains a control character ('\\x07')"),
    ("x" * 250 + ".fsr", "254 bytes, over 230 (the file system's 255-byte limit minus the 25 bytes"),
    ("x" * 227 + ".fsr", "231 bytes, over 230"),
    (".fsr", "is a hidden name; fsr index, fsr upload and folder validation never list it"),
    (".hidden.fsr", "is a hidden name"),
    (".quarantine", "is a hidden name"),
    ("x.incomplete", "ends with '.incomplete', the name of an unsealed Run's file"),
    ("{episode:q}.fsr", "is not a valid output-name template"),
    ("{user}.fsr", "unknown field {user} (use {name}, {seed}, {episode})"),
])
def test_bad_output_names_fail_fsr_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, fragment: str
) -> None:
    """Control characters, names too long for <name>.incomplete and bad templates fail at compile time, exit 2."""
    assert main(["check", str(_check(tmp_path, {"output": {"name": name}}))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("plugins.record.config.output.name: ")
    assert fragment in err
    assert err.count("\n") == 1


def test_a_template_name_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """{name}, {seed} and {episode} with format specs compile."""
    assert main(["check", str(_check(tmp_path, {"output": {"name": "{name}-{seed}-{episode:05d}.fsr"}}))]) == 0
    assert "name: '{name}-{seed}-{episode:05d}.fsr'" in capsys.readouterr().out
