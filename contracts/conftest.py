"""The ``make_core`` fixture: one Core driver factory per registered implementation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from contracts.implementations import IMPLEMENTATIONS, load
from fastsim_contract.harness import CoreDriver, HarnessSpec

MakeCore = Callable[..., CoreDriver]


@pytest.fixture(params=[target for _, target in IMPLEMENTATIONS], ids=[name for name, _ in IMPLEMENTATIONS])
def make_core(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeCore]:
    """Build drivers of the implementation under test; every driver is closed afterwards."""
    factory = load(request.param)
    drivers: list[CoreDriver] = []

    def make(**spec: Any) -> CoreDriver:
        driver = factory(HarnessSpec(**spec), tmp_path / f"run{len(drivers)}")
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        driver.close()
