"""The Core contract (``core-contract.md``), run against every implementation.

The cases live in ``fastsim_contract.testing`` (``check_core``), so a Core can check
itself without this repository's test suite; here each case is one pytest test per
implementation listed in ``implementations.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from contracts.implementations import IMPLEMENTATIONS, load
from fastsim_contract.errors import GrantRefused
from fastsim_contract.harness import CoreDriver, DriverFactory, HarnessSpec
from fastsim_contract.testing import CASES, ContractViolation, check_core, run_case


@pytest.mark.parametrize("target", [t for _, t in IMPLEMENTATIONS], ids=[n for n, _ in IMPLEMENTATIONS])
@pytest.mark.parametrize("case", list(CASES))
def test_core_contract_case(target: str, case: str, tmp_path: Path) -> None:
    """The implementation passes this case of fastsim_contract.testing.check_core."""
    outcome = run_case(load(target), case, tmp_path)
    if outcome.status == "skipped":
        pytest.skip(outcome.reason or "optional capability missing")
    assert outcome.ok, f"{case}: {outcome.reason}"


class _Refusing:
    """Delegates everything to ``inner`` except what is set on the instance."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _refusing_write_lease_grants(target: str) -> DriverFactory:
    """``target``'s drivers, with Core services that refuse the output.write_lease grant."""
    factory = load(target)

    def make(spec: HarnessSpec, workdir: Path) -> CoreDriver:
        driver = _Refusing(factory(spec, workdir))

        def core(component: str) -> Any:
            services = _Refusing(driver._inner.core(component))

            def request_grant(grant: str) -> None:
                if grant == "output.write_lease":
                    raise GrantRefused("request_grant: 'output.write_lease' is not justified")
                services._inner.request_grant(grant)

            services.request_grant = request_grant  # type: ignore[attr-defined]
            return services

        driver.core = core  # type: ignore[attr-defined]
        return cast(CoreDriver, driver)

    return make


def test_check_core_names_the_case_a_core_breaks(tmp_path: Path) -> None:
    """A Core that refuses the write-lease grant (the fake Core's old behaviour) fails check_core, naming that case."""
    target = dict(IMPLEMENTATIONS)["fake"]
    cases = ["the_write_lease_grant_is_always_given", "first_completion_wins"]
    with pytest.raises(ContractViolation, match="the_write_lease_grant_is_always_given") as caught:
        check_core(_refusing_write_lease_grants(target), tmp_path, cases=cases)
    assert [o.name for o in caught.value.report.failed] == ["the_write_lease_grant_is_always_given"]


def test_check_core_passes_a_conforming_core(tmp_path: Path) -> None:
    """check_core returns a report of passed cases for the fake Core (no pytest needed to run it)."""
    target = dict(IMPLEMENTATIONS)["fake"]
    report = check_core(load(target), tmp_path, cases=["first_completion_wins", "render_grants_follow_the_plan"])
    assert [o.status for o in report.outcomes] == ["passed", "passed"]
