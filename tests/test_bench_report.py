"""The benchmarks' one JSON line (``benchmarks/_report.py``) is strict JSON with each target beside its figure."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from types import ModuleType

import pytest

REPORT = Path(__file__).resolve().parent.parent / "benchmarks" / "_report.py"


def _report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_report_under_test", REPORT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _strict(line: str) -> dict[str, object]:
    def refuse(constant: str) -> object:
        raise ValueError(f"not strict JSON: {constant}")

    parsed = json.loads(line, parse_constant=refuse)
    assert isinstance(parsed, dict)
    return parsed


def test_a_nan_or_infinite_figure_is_null_and_its_target_not_met(capsys: pytest.CaptureFixture[str]) -> None:
    """NaN and infinite values (figures and extra keys) print as null, the line parses strictly, a target on one is not met."""
    figures = _report().Figures("bench_x")
    figures.add("counter_missing", math.nan)
    figures.add("ratio", math.inf, 1.3, "<=")
    figures.add("speed", -math.inf, 50.0, ">=")
    figures.add("fine", 1.0, 1.3, "<=")
    figures.extra["rounds_seen"] = [1.0, math.nan]
    figures.emit(True)
    line = capsys.readouterr().out.splitlines()[-1]
    got = _strict(line)
    assert got["figures"] == {
        "counter_missing": {"value": None, "target": None, "op": None, "met": None},
        "ratio": {"value": None, "target": 1.3, "op": "<=", "met": False},
        "speed": {"value": None, "target": 50.0, "op": ">=", "met": False},
        "fine": {"value": 1.0, "target": 1.3, "op": "<=", "met": True},
    }
    assert got["rounds_seen"] == [1.0, None]
    assert got["passed"] is False
    assert got["benchmark"] == "bench_x"


def test_figures_with_their_targets_decide_passed() -> None:
    """passed is true when every figure with a target met it, whichever its op; figures without one do not count."""
    figures = _report().Figures("bench_x")
    figures.add("cost", 0.08, 0.10, "<=")
    figures.add("x_real_time", 60.0, 50.0, ">=")
    figures.add("baseline_ms", 12.5)
    assert figures.passed
    figures.add("other_cost", 0.11, 0.10, "<=")
    assert not figures.passed
    assert _strict(figures.line())["figures"]["other_cost"]["met"] is False  # type: ignore[index]
