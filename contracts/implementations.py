"""The Core implementations the contract suite checks.

Each entry is ``(id, "module:attribute")`` naming a ``fastsim_contract.harness``
``DriverFactory``.  Add one line to check another Core (e.g. the plugin's fake Core in
``fastsim_record.testing``).
"""

from __future__ import annotations

import importlib

from fastsim_contract.harness import DriverFactory

__all__ = ["IMPLEMENTATIONS", "load"]

IMPLEMENTATIONS: list[tuple[str, str]] = [
    ("embedded", "fastsim_embedded.testing.contract_driver:make_driver"),
    ("fake", "fastsim_record.testing.contract_driver:make_driver"),
    ("gymnasium", "fastsim_embedded.gymnasium_host.contract_driver:make_driver"),
]


def load(target: str) -> DriverFactory:
    """Import ``module:attribute``."""
    module, _, attribute = target.partition(":")
    factory: DriverFactory = getattr(importlib.import_module(module), attribute)
    return factory
