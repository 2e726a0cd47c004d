"""``fastsim_contract.lifetime.child_report``: what an episode child reported, for both
sweeps (the host's ``fsr record --episodes`` and the plugin's sweep jobs)."""

from __future__ import annotations

from fastsim_contract.lifetime import child_report
from fastsim_contract.run_structure import value_at


def test_the_last_json_object_line_is_the_report() -> None:
    """The report is the last stdout line that is a JSON object; arrays and text are skipped."""
    stdout = 'progress\n{"status": "first"}\n[1, 2]\nnot json\n{"status": "committed"}\ntrailing text\n'
    assert child_report(0, stdout, "") == ({"status": "committed"}, "")


def test_without_a_report_the_reason_is_stderr_last_line_else_the_code() -> None:
    """No report: the reason is stderr's last non-blank line, else the exit code."""
    assert child_report(2, "[1]\nplain\n", "warning\nfsr record: run.yaml: bad\n") == (
        None, "fsr record: run.yaml: bad")
    assert child_report(-9, "", "  \n") == (None, "the episode process exited with code -9")


def test_value_at_walks_mappings_and_stops_at_anything_else() -> None:
    """value_at follows mapping keys and gives None at a missing key or a non-mapping."""
    doc = {"streams": {"observations": {"mode": "explicit"}, "cameras": ["x"]}}
    assert value_at(doc, "streams", "observations", "mode") == "explicit"
    assert value_at(doc, "streams", "missing", "mode") is None
    assert value_at(doc, "streams", "cameras", "0") is None
    assert value_at(None, "streams") is None
    assert value_at(doc) is doc
