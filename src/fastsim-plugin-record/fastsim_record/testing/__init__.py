"""Public test doubles for Record and for Core implementations.

``fastsim_record.testing.FakeCore`` (and the names below) are loaded on first use, so
importing one submodule (``envelopes``, ``strategies``) does not load the others:

    | name                                          | module            |
    |-----------------------------------------------|-------------------|
    | FakeCore, FakeServices, FakeRunContext,       | fake_core         |
    | FakePluginContext, InjectedFault,             |                   |
    | numeric_channels                              |                   |
    | FakeOutputService, OutputFaults,              | fake_output       |
    | FakeWriteLease, FakeReadbackLease             |                   |
    | Harness, make_config                          | harness           |
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "FakeCore",
    "FakeOutputService",
    "FakePluginContext",
    "FakeReadbackLease",
    "FakeRunContext",
    "FakeServices",
    "FakeWriteLease",
    "Harness",
    "InjectedFault",
    "OutputFaults",
    "make_config",
    "numeric_channels",
]

_WHERE = {
    **dict.fromkeys(
        ("FakeCore", "FakeServices", "FakeRunContext", "FakePluginContext", "InjectedFault", "numeric_channels"),
        "fake_core",
    ),
    **dict.fromkeys(("FakeOutputService", "OutputFaults", "FakeWriteLease", "FakeReadbackLease"), "fake_output"),
    **dict.fromkeys(("Harness", "make_config"), "harness"),
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'fastsim_record.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(f"fastsim_record.testing.{module}"), name)
