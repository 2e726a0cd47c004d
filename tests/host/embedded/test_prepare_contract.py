"""Runtime checks as defence in depth: prepare refuses what 0.3.12 forbids, whatever the Run's lock.

The fixture `tests/fixtures/runs/locked-old.yaml` is the Run of issue 27: locked to 0.3.0, whose
schema still accepts `preserve_incomplete: false` and a postprocessor. It used to record and
commit with exit 0, silently ignoring the postprocessor.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runs"
LOCKED_OLD = FIXTURES / "locked-old.yaml"
REFUSED = "refused at prepare by config rule {rule} of the plugin://fastsim/record 0.3.12 prepare contract"


def _locked_old(tmp_path: Path, **config: object) -> Path:
    """The fixture with its Record config replaced by ``config`` (still locked to 0.3.0)."""
    run = yaml.safe_load(LOCKED_OLD.read_text())
    run["plugins"]["record"]["config"] = {"output": {"name": "old.fsr"}, **config}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(run))
    return path


def test_the_locked_old_fixture_is_refused_before_any_tick_and_nothing_is_committed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fsr record` on the issue's Run exits 1 with one line naming the field and the rule; no file, no tick."""
    run = tmp_path / "locked-old.yaml"
    shutil.copy(LOCKED_OLD, run)
    out = tmp_path / "out"
    code = main(["record", str(run), "--no-progress", "--duration", "1", "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1
    assert "plugins.record.config.finalize.preserve_incomplete: must be true" in err
    assert REFUSED.format(rule=5) in err
    assert "(also refused: plugins.record.config.finalize.postprocessors)" in err
    assert not (out / "old.fsr").exists()
    assert [p.name for p in out.rglob("*") if p.name.startswith("old.fsr")] == []

    result = run_session(prepare_run(run, duration_s=1.0), tmp_path / "again")
    assert (result.ticks, result.outcome.status) == (0, "failed")
    assert not list((tmp_path / "again").rglob("old.fsr*"))


@pytest.mark.parametrize(
    ("config", "field", "rule"),
    [
        ({"finalize": {"postprocessors": {"video": {"codec": "h264"}}}}, "finalize.postprocessors", 6),
        ({"finalize": {"preserve_incomplete": False}}, "finalize.preserve_incomplete", 5),
        ({"streams": {"events": False}}, "streams.events", 4),
        ({"streams": {"control": False}}, "streams.control", 4),
    ],
)
def test_each_forbidden_field_is_refused_at_prepare(
    tmp_path: Path, config: dict[str, object], field: str, rule: int
) -> None:
    """Each of the four is refused on its own, naming its field and rule, before any tick."""
    result = run_session(prepare_run(_locked_old(tmp_path, **config), duration_s=1.0), tmp_path / "out")
    assert (result.ticks, result.outcome.status) == (0, "failed")
    reason = result.outcome.reason or ""
    assert f"plugins.record.config.{field}: " in reason
    assert REFUSED.format(rule=rule) in reason
    assert not list((tmp_path / "out").rglob("old.fsr*"))


def test_lifecycle_false_names_the_cause_not_a_fence_symptom(tmp_path: Path) -> None:
    """`lifecycle: false` used to record the whole Run and fail at the fence (F2); now prepare names the field."""
    result = run_session(
        prepare_run(_locked_old(tmp_path, streams={"lifecycle": False}), duration_s=2.0), tmp_path / "out"
    )
    reason = result.outcome.reason or ""
    assert result.ticks == 0
    assert "plugins.record.config.streams.lifecycle: must be true: the global capture source mask" in reason
    assert REFUSED.format(rule=4) in reason
    assert "fence rule" not in reason


def test_fsr_check_reports_what_prepare_will_refuse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`fsr check` on the fixture prints the effective config, then the refusal line, and exits 2."""
    assert main(["check", str(LOCKED_OLD)]) == 2
    captured = capsys.readouterr()
    assert "# plugins.record.config (plugin://fastsim/record 0.3.0)" in captured.out
    assert captured.err.count("\n") == 1
    assert REFUSED.format(rule=5) in captured.err
    history = (Path(__file__).resolve().parents[3] / "docs" / "catalog-history.md").read_text()
    assert "the runtime rejects them" in history
    assert f"```\n{captured.err}```" in history  # the doc quotes the line exactly


def test_a_run_within_the_contract_still_records_under_an_old_lock(tmp_path: Path) -> None:
    """The check refuses only rules 4-6: the same lock with the default finalize section records."""
    result = run_session(prepare_run(_locked_old(tmp_path), duration_s=0.5), tmp_path / "out")
    assert result.outcome.status == "succeeded", result.outcome.reason
    assert (tmp_path / "out" / "old.fsr").is_file()
