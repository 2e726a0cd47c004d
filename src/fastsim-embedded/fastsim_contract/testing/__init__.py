"""The shippable Core contract check: ``check_core(driver_factory)``.

Imports no test framework, so a Core implementation can check itself in a plain
install (``python -c "from fastsim_contract.testing import check_core; ..."``) or from
any test runner (``contracts/test_core_contract.py`` runs each case as a pytest test).
"""

from fastsim_contract.testing import cases as _cases  # noqa: F401 - registers every case
from fastsim_contract.testing.check import (
    CASES,
    CaseOutcome,
    CheckReport,
    ContractViolation,
    check_core,
    run_case,
)
from fastsim_contract.testing.kit import Skip

__all__ = ["CASES", "CaseOutcome", "CheckReport", "ContractViolation", "Skip", "check_core", "run_case"]
