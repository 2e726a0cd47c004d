"""Contract cases, section 6: completion, the exact cut, finalizers and Run status."""

# ruff: noqa: S101 - a contract case states the contract as assertions (check_core refuses -O)
from __future__ import annotations

from fastsim_contract.errors import TerminalError
from fastsim_contract.testing.check import case
from fastsim_contract.testing.kit import (
    ALL_SOURCES,
    CHANNELS,
    MakeCore,
    plan,
    raises,
    register,
    values_at,
    watch,
)
from fastsim_contract.values import (
    CompletionKind,
    CompletionRequest,
    SourceKind,
)

# -- 6. terminal coordinator ----------------------------------------------------------------------


@case
def case_first_completion_wins(make: MakeCore) -> None:
    """Only the first completion request is accepted; it is the cut's completion."""
    driver = make(capture=plan())
    core = driver.core("record")
    first = CompletionRequest(CompletionKind.FAILED, "lane overflow", "record")
    assert core.request_completion(first) is True
    assert core.request_completion(CompletionRequest(CompletionKind.NORMAL, "done", "host")) is False
    finish = driver.finish(CompletionRequest(CompletionKind.CANCELLED, "late", "host"))
    assert finish.cut.completion == first
    assert finish.status == "failed"


@case
def case_the_cut_is_exact(make: MakeCore) -> None:
    """The cut names the last global sequence and each source's last sequence."""
    driver = make(capture=plan(), channels=CHANNELS)
    core, seen = watch(driver, *ALL_SOURCES)
    register(core, "record")
    driver.start_producers()
    for k in range(4):
        driver.tick(values_at(k))
        driver.issue_control(f"c{k}")
    driver.reset()
    driver.publish_plugin_event("marker")
    finish = driver.finish(CompletionRequest(CompletionKind.NORMAL, "done", "host"))
    cut = finish.cut
    assert cut.final_global_sequence == max(seen.globals())
    assert sorted(seen.globals()) == list(range(1, cut.final_global_sequence + 1))
    last: dict[str, int] = {}
    for envelope in seen.items:
        key = "observations" if envelope.source is SourceKind.GENERATION_BARRIER else envelope.source.value
        last[key] = envelope.source_sequence
    assert {k: cut.source_final_sequences.get(k, 0) for k in last} == last
    assert cut.final_generation == 1
    with raises(TerminalError):
        driver.publish_lifecycle("after.cut")


@case
def case_finalizer_gets_the_cut_and_an_absolute_deadline(make: MakeCore) -> None:
    """finalize(cut, deadline) runs once after the cut with a monotonic deadline in the future."""
    import time

    driver = make(capture=plan())
    finalizer = register(driver.core("record"), "record", timeout=5.0)
    before = time.monotonic()
    finish = driver.finish()
    (cut, deadline), = finalizer.cuts
    assert cut == finish.cut
    assert deadline > before
    assert finish.status == "succeeded"
    assert finish.finalizers[0].ok


@case
def case_completion_kind_sets_the_run_status(make: MakeCore) -> None:
    """normal/failed/cancelled/stopped completions end the Run with that status."""
    for kind, status in (
        (CompletionKind.NORMAL, "succeeded"),
        (CompletionKind.FAILED, "failed"),
        (CompletionKind.CANCELLED, "cancelled"),
        (CompletionKind.STOPPED, "stopped"),
    ):
        driver = make(capture=plan())
        register(driver.core("record"), "record")
        finish = driver.finish(CompletionRequest(kind, "why", "host"))
        assert finish.status == status, f"{kind.value} completion: status {finish.status}"
        assert finish.cut.completion.kind is kind


@case
def case_required_finalizer_failure_fails_a_normal_run(make: MakeCore) -> None:
    """A required finalizer's failure fails the Run even though another source won with normal."""
    driver = make(capture=plan())
    register(driver.core("record"), "record", "fail", required=True)
    register(driver.core("other"), "other", "ok", required=False)
    finish = driver.finish(CompletionRequest(CompletionKind.NORMAL, "duration reached", "host"))
    assert finish.status == "failed"
    assert finish.reason is not None
    assert "record" in finish.reason


@case
def case_optional_finalizer_failure_does_not_fail_the_run(make: MakeCore) -> None:
    """An optional finalizer's failure is reported but the Run still succeeds."""
    driver = make(capture=plan())
    register(driver.core("aux"), "aux", "raise", required=False)
    finish = driver.finish(CompletionRequest(CompletionKind.NORMAL, "done", "host"))
    assert finish.status == "succeeded"
    assert not finish.finalizers[0].ok


@case
def case_overrunning_finalizer_is_cancelled_and_fails(make: MakeCore) -> None:
    """A finalizer still running at its deadline is cancelled and reported timed out."""
    driver = make(capture=plan(), max_finalizer_timeout_s=0.2)
    finalizer = register(driver.core("record"), "record", "hang", timeout=60.0)
    finish = driver.finish()
    assert finalizer.cancelled.is_set()
    assert finish.finalizers[0].timed_out
    assert finish.status == "failed"


@case
def case_registration_after_the_cut_is_refused(make: MakeCore) -> None:
    """The terminal coordinator refuses finalizers once the cut is taken."""
    driver = make(capture=plan())
    driver.finish()
    with raises(TerminalError):
        register(driver.core("late"), "late")

