"""The plugins of one Run: found through the ``fastsim.plugins`` entry points, given a
context, and torn down (stop, then close) whatever happened.

The component ``plugin://<ns>/<name>`` is the entry point named ``<ns>.<name>``
(``plugin://fastsim/record`` is ``fastsim.record``).
"""

from __future__ import annotations

from importlib.metadata import entry_points

import attrs

from fastsim_contract.protocols import Plugin, PluginFactory
from fastsim_contract.run_compiler import entry_point_name
from fastsim_contract.run_errors import RunConfigError, RunIssue
from fastsim_embedded.host.services import EmbeddedCore

__all__ = ["PLUGINS_ENTRY_POINT_GROUP", "EmbeddedPluginContext", "discover_plugin", "one_line", "teardown"]

PLUGINS_ENTRY_POINT_GROUP = "fastsim.plugins"


@attrs.frozen
class EmbeddedPluginContext:
    """What the host hands a plugin factory (``PluginContext``)."""

    component_id: str
    config: object
    core: EmbeddedCore
    alias: str = ""


#: factories already found in this process, by (lookup function, entry point name): a
#: Run after the first skips the scan of every installed distribution's entry points
#: (about 5 ms with a few hundred installed).  Only finds are kept, so a plugin
#: installed later is still found; the lookup function is part of the key so that a
#: replaced ``entry_points`` (a test's) is asked afresh.
_FOUND: dict[tuple[object, str], PluginFactory] = {}


def discover_plugin(component_id: str) -> PluginFactory:
    """The installed factory for ``component_id`` (``RunConfigError`` if none)."""
    name = entry_point_name(component_id)
    key = (entry_points, name)
    found = _FOUND.get(key)
    if found is not None:
        return found
    for ep in entry_points(group=PLUGINS_ENTRY_POINT_GROUP):
        if ep.name == name:
            factory: PluginFactory = ep.load()
            _FOUND[key] = factory
            return factory
    raise RunConfigError([RunIssue(
        "plugins",
        f"no installed plugin factory for {component_id} "
        f"(no entry point {name!r} in group {PLUGINS_ENTRY_POINT_GROUP!r})",
    )])


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def teardown(plugins: list[tuple[str, Plugin]]) -> tuple[str, ...]:
    """``stop()`` then ``close()`` every plugin; each failure as ``alias.step: one line``."""
    errors: list[str] = []
    for alias, plugin in plugins:
        for step in (plugin.stop, plugin.close):
            try:
                step()
            except Exception as exc:
                errors.append(f"{alias}.{step.__name__}: {one_line(exc)}")
    return tuple(errors)
