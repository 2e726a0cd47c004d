"""``check_core``: the Core contract (``contracts/core-contract.md``) as one function.

In the spirit of trio's ``check_one_way_stream``: hand it a ``DriverFactory``
(``fastsim_contract.harness``) and it runs every case against fresh Runs of that Core::

    from fastsim_contract.testing import check_core
    report = check_core(make_driver)          # ContractViolation when a case fails

It imports no test framework: a case is a plain function ``case(make)`` that builds the
drivers it needs with ``make(**HarnessSpec fields)`` and raises ``AssertionError`` (or
any error) when the Core breaks the contract, or ``Skip`` when the Core lacks an optional
driver capability (``CameraDriver``, ``RenderDriver``).  ``run_case`` runs one case,
so a test framework can report each case on its own (``contracts/test_core_contract.py``).

    | # | outcome of a case | when                                            |
    |---|-------------------|-------------------------------------------------|
    | 1 | passed            | it returned                                     |
    | 2 | skipped           | it raised ``Skip``                              |
    | 3 | failed            | anything else; the reason is one line           |
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from fastsim_contract.harness import CoreDriver, DriverFactory, HarnessSpec
from fastsim_contract.testing.kit import MakeCore, Skip

__all__ = ["CASES", "CaseOutcome", "CheckReport", "ContractViolation", "case", "check_core", "run_case"]

Case = Callable[[MakeCore], None]

#: Every case, by name, in the contract document's order (filled by ``@case``).
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    """Register ``fn`` as a contract case named after it (without a ``case_`` prefix)."""
    CASES[fn.__name__.removeprefix("case_")] = fn
    return fn


@attrs.frozen
class CaseOutcome:
    """How one case went: ``passed``, ``skipped`` or ``failed`` with a one-line reason."""

    name: str
    status: str
    reason: str | None = None

    @property
    def ok(self) -> bool:
        """Passed or skipped."""
        return self.status != "failed"


@attrs.frozen
class CheckReport:
    """Every case's outcome."""

    outcomes: tuple[CaseOutcome, ...]

    @property
    def failed(self) -> tuple[CaseOutcome, ...]:
        """The failed cases."""
        return tuple(o for o in self.outcomes if o.status == "failed")

    def lines(self) -> list[str]:
        """One line per case that did not pass."""
        return [f"{o.name}: {o.status}: {o.reason}" for o in self.outcomes if o.status != "passed"]


class ContractViolation(AssertionError):
    """The Core under test failed at least one case; ``report`` has them all."""

    def __init__(self, report: CheckReport) -> None:
        self.report = report
        failed = report.failed
        super().__init__(
            f"{len(failed)} of {len(report.outcomes)} Core contract cases failed:\n"
            + "\n".join(f"  {o.name}: {o.reason}" for o in failed)
        )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def run_case(factory: DriverFactory, name: str, workdir: Path) -> CaseOutcome:
    """Run the case ``name`` against fresh drivers from ``factory`` under ``workdir``."""
    fn = CASES[name]
    drivers: list[CoreDriver] = []

    def make(**spec: Any) -> CoreDriver:
        driver = factory(HarnessSpec(**spec), workdir / f"{name}-run{len(drivers)}")
        drivers.append(driver)
        return driver

    try:
        fn(make)
    except Skip as exc:
        return CaseOutcome(name, "skipped", str(exc))
    except Exception as exc:  # the case's verdict, reported as one line
        return CaseOutcome(name, "failed", _one_line(exc))
    finally:
        for driver in drivers:
            driver.close()
    return CaseOutcome(name, "passed")


def check_core(
    factory: DriverFactory,
    workdir: Path | None = None,
    *,
    cases: Iterable[str] | None = None,
    raise_on_failure: bool = True,
) -> CheckReport:
    """Run every case (or ``cases``) against ``factory``; ``ContractViolation`` if any fails.

    ``workdir`` holds the Runs' output directories (a temporary directory by default).
    """
    import fastsim_contract.testing.cases  # noqa: F401 - registers every case

    if not __debug__:
        raise RuntimeError("check_core states the contract as assertions: do not run it under python -O")
    names = list(CASES) if cases is None else list(cases)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise KeyError(f"unknown contract cases: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory(prefix="fastsim-contract-") as scratch:
        base = Path(scratch) if workdir is None else workdir
        report = CheckReport(tuple(run_case(factory, n, base) for n in names))
    if raise_on_failure and report.failed:
        raise ContractViolation(report)
    return report
