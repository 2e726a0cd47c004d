"""Contract cases, section 7: the output transaction, receipts, disposal by policy,
component-bound leases, a failed Run that never publishes (FR1) unless Core's data source
asked to keep what was recorded (FR2), which a plugin cannot ask (FR3)."""

# ruff: noqa: S101 - a contract case states the contract as assertions (check_core refuses -O)
from __future__ import annotations

import hashlib
from typing import Any

from fastsim_contract.errors import LeaseError
from fastsim_contract.harness import CoreDriver
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.protocols import OutputService
from fastsim_contract.testing.check import case
from fastsim_contract.testing.kit import (
    CommittingFinalizer,
    MakeCore,
    plan,
    raises,
    receipt,
    register,
    write_sealed,
)
from fastsim_contract.values import (
    CompletionKind,
    CompletionRequest,
    FinalizerRegistrationRequest,
)

# -- 7. output leases ---------------------------------------------------------------------------


def _completion_id(driver: object, component: str = "record") -> str:
    cid: str = driver.core(component).run.completion_id  # type: ignore[attr-defined]
    return cid


def _outputs(make: MakeCore, **spec: Any) -> tuple[CoreDriver, OutputService, str]:
    """A fresh Run's driver, the ``record`` component's outputs and the completion id."""
    driver = make(capture=plan(), **spec)
    return driver, driver.core("record").outputs, _completion_id(driver)


@case
def case_commit_publishes_the_exact_bytes(make: MakeCore) -> None:
    """seal -> exact readback -> confirm -> commit publishes exactly what was written."""
    driver, outputs, cid = _outputs(make)
    data = b"FSR!" * 1000
    lease = write_sealed(outputs, "episode.fsr", data)
    assert driver.artifact("episode.fsr") is None
    readback = outputs.open_readback(lease)
    assert readback.read() == data
    readback.seek(4)
    assert readback.tell() == 4
    readback.close()
    outputs.confirm_validation(readback, receipt(len(data), cid))
    assert outputs.commit(lease) == "episode.fsr"
    assert driver.artifact("episode.fsr") == data
    assert driver.leftovers("episode.fsr") == ()


@case
def case_confirm_requires_the_exact_readback_lease(make: MakeCore) -> None:
    """A superseded, foreign or fake readback lease is refused by confirm_validation."""
    driver, outputs, cid = _outputs(make)
    lease = write_sealed(outputs, "a.fsr", b"aaaa")
    other = write_sealed(outputs, "b.fsr", b"bbbb")
    stale = outputs.open_readback(lease)
    current = outputs.open_readback(lease)
    foreign = outputs.open_readback(other)
    with raises(LeaseError):
        outputs.confirm_validation(stale, receipt(4, cid))
    with raises(LeaseError):
        outputs.confirm_validation(object(), receipt(4, cid))  # type: ignore[arg-type]
    with raises(LeaseError):
        outputs.commit(lease)
    outputs.confirm_validation(foreign, receipt(4, cid))
    outputs.confirm_validation(current, receipt(4, cid))
    outputs.commit(lease)
    assert driver.artifact("a.fsr") == b"aaaa"


@case
def case_receipt_must_match_the_sealed_write(make: MakeCore) -> None:
    """A receipt with the wrong size, completion or a digest under integrity none is refused."""
    _driver, outputs, cid = _outputs(make)
    lease = write_sealed(outputs, "a.fsr", b"abc")
    readback = outputs.open_readback(lease)
    for bad in (
        receipt(2, cid),
        receipt(3, "another-completion"),
        receipt(3, cid, content_sha256="00" * 32),
        {"validated_bytes": 3},
    ):
        with raises(LeaseError):
            outputs.confirm_validation(readback, bad)
    outputs.confirm_validation(readback, receipt(3, cid))


@case
def case_sha256_policy_requires_a_matching_digest(make: MakeCore) -> None:
    """Under integrity sha256 the receipt must carry the file's SHA-256."""

    driver, outputs, cid = _outputs(make, output_policy=RunOutputPolicy(integrity="sha256"))
    lease = write_sealed(outputs, "a.fsr", b"abc")
    readback = outputs.open_readback(lease)
    with raises(LeaseError):
        outputs.confirm_validation(readback, receipt(3, cid))
    outputs.confirm_validation(readback, receipt(3, cid, content_sha256=hashlib.sha256(b"abc").hexdigest()))
    outputs.commit(lease)
    assert driver.artifact("a.fsr") == b"abc"


@case
def case_transaction_steps_out_of_order_are_refused(make: MakeCore) -> None:
    """No write after seal, no readback before seal, no path-like names."""
    _driver, outputs, _cid = _outputs(make)
    lease = outputs.open_write("a.fsr")
    with raises(LeaseError):
        outputs.open_readback(lease)
    outputs.seal(lease)
    with raises(LeaseError):
        lease.write(b"more")
    with raises(LeaseError):
        outputs.seal(lease)
    for name in ("../evil.fsr", "dir/x.fsr", ""):
        with raises(LeaseError):
            outputs.open_write(name)


@case
def case_abort_never_publishes(make: MakeCore) -> None:
    """abort leaves nothing under the final name, is idempotent, and is refused after commit."""
    driver, outputs, cid = _outputs(make)
    lease = write_sealed(outputs, "a.fsr", b"abc")
    outputs.abort(lease)
    outputs.abort(lease)
    assert driver.artifact("a.fsr") is None
    with raises(LeaseError):
        outputs.commit(lease)
    done = write_sealed(outputs, "b.fsr", b"b")
    readback = outputs.open_readback(done)
    outputs.confirm_validation(readback, receipt(1, cid))
    outputs.commit(done)
    with raises(LeaseError):
        outputs.abort(done)
    assert driver.artifact("b.fsr") == b"b"


def _leftovers_by_policy(make: MakeCore, publish: bool, preserve: bool, *, overrun: bool) -> tuple[str, ...]:
    policy = RunOutputPolicy(preserve_incomplete=preserve, publish_incomplete=publish)
    driver = make(capture=plan(), max_finalizer_timeout_s=0.2, output_policy=policy)
    core = driver.core("record")
    lease = core.outputs.open_write("a.fsr")
    lease.write(b"partial")
    if overrun:
        register(core, "record", "hang", timeout=60.0)
        finish = driver.finish()
        assert finish.finalizers[0].timed_out
    else:
        core.outputs.abort(lease)
    with raises(LeaseError):
        lease.write(b"more")
    assert driver.artifact("a.fsr") is None
    return tuple(driver.leftovers("a.fsr"))


_POLICIES = ((True, True, "published"), (False, True, "quarantined"), (False, False, "deleted"))


def _check_disposal(leftovers: tuple[str, ...], expect: str, what: str) -> None:
    if expect == "published":
        assert "a.fsr.incomplete" in leftovers, f"{what}: publish_incomplete kept nothing as a.fsr.incomplete"
    elif expect == "quarantined":
        assert leftovers, f"{what}: preserve_incomplete kept nothing"
        assert "a.fsr.incomplete" not in leftovers, f"{what}: quarantined file left as a.fsr.incomplete"
    else:
        assert leftovers == (), f"{what}: the staging file was kept: {leftovers}"


@case
def case_overrun_revokes_the_lease_and_disposes_by_policy(make: MakeCore) -> None:
    """After a finalizer overran, Core revokes its lease and disposes the staging file by policy."""
    for publish, preserve, expect in _POLICIES:
        _check_disposal(_leftovers_by_policy(make, publish, preserve, overrun=True), expect, "revoked")


@case
def case_abort_disposes_by_policy(make: MakeCore) -> None:
    """abort disposes the staging file by the same policy as revocation (kept, quarantined or deleted)."""
    for publish, preserve, expect in _POLICIES:
        _check_disposal(_leftovers_by_policy(make, publish, preserve, overrun=False), expect, "aborted")


@case
def case_a_component_cannot_use_another_components_lease(make: MakeCore) -> None:
    """Leases are bound to the component whose Core services opened them."""
    driver = make(capture=plan())
    mine, theirs = driver.core("record").outputs, driver.core("other").outputs
    lease = write_sealed(mine, "a.fsr", b"abc")
    with raises(LeaseError):
        theirs.open_readback(lease)
    readback = mine.open_readback(lease)
    with raises(LeaseError):
        theirs.confirm_validation(readback, receipt(3, _completion_id(driver)))
    with raises(LeaseError):
        theirs.abort(lease)
    mine.confirm_validation(readback, receipt(3, _completion_id(driver)))
    with raises(LeaseError):
        theirs.commit(lease)
    mine.commit(lease)
    assert driver.artifact("a.fsr") == b"abc"


@case
def case_a_failed_run_never_publishes(make: MakeCore) -> None:
    """Once the winning completion is failed, Core refuses commit; other kinds may commit."""
    for kind in CompletionKind:
        published = kind is not CompletionKind.FAILED
        driver = make(capture=plan())
        core = driver.core("record")
        finalizer = CommittingFinalizer("record", core.outputs, _completion_id(driver))
        core.register_finalizer(FinalizerRegistrationRequest("record", True, 10.0, ("lifecycle",)), finalizer)
        finish = driver.finish(CompletionRequest(kind, "why", "host"))
        assert (driver.artifact("final.fsr") is not None) is published, f"{kind.value}: published is not {published}"
        assert isinstance(finalizer.error, LeaseError) is (not published)
        assert finish.finalizers[0].ok is published


def _committing(driver: CoreDriver) -> CommittingFinalizer:
    core = driver.core("record")
    finalizer = CommittingFinalizer("record", core.outputs, _completion_id(driver))
    core.register_finalizer(FinalizerRegistrationRequest("record", True, 10.0, ("lifecycle",)), finalizer)
    return finalizer


@case
def case_a_failed_data_source_may_keep_what_was_recorded(make: MakeCore) -> None:
    """FR2: a failed completion from Core's own side with keep_recorded lets the commit through;
    the cut carries the request unchanged and the Run's status stays failed."""
    driver = make(capture=plan())
    finalizer = _committing(driver)
    request = CompletionRequest(CompletionKind.FAILED, "the env raised X", "host", keep_recorded=True)
    finish = driver.finish(request)
    assert finish.cut.completion == request
    assert finalizer.error is None, f"commit refused: {finalizer.error}"
    assert driver.artifact("final.fsr") == finalizer.data
    assert finish.finalizers[0].ok
    assert finish.status == "failed"


@case
def case_a_plugin_cannot_keep_a_failed_runs_recording(make: MakeCore) -> None:
    """FR3: a plugin's failed request with keep_recorded still wins, as a plain failed: no commit."""
    driver = make(capture=plan())
    finalizer = _committing(driver)
    asked = CompletionRequest(CompletionKind.FAILED, "lane overflow", "record", keep_recorded=True)
    assert driver.core("record").request_completion(asked) is True
    finish = driver.finish(CompletionRequest(CompletionKind.FAILED, "late", "host", keep_recorded=True))
    assert finish.cut.completion.kind is CompletionKind.FAILED
    assert finish.cut.completion.reason == "lane overflow"
    assert not finish.cut.completion.keep_recorded
    assert isinstance(finalizer.error, LeaseError)
    assert driver.artifact("final.fsr") is None
    assert finish.status == "failed"


# -- cameras (optional driver capability) ---------------------------------------------------------
