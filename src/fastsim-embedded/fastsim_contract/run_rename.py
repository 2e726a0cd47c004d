"""One Run, many output names: a compiled Run renamed per episode without compiling it again.

A driver that runs the same Run once per episode (the Gymnasium host: one file per
episode) compiles it once and gives each episode its own primary output name.  Core
knows no plugin's config shape, so the rename is Core's, and each component's compiled
config honours it the way its own compiler would:

    | # | the component's compiled config          | how ``with_output_name`` renames it       |
    |---|------------------------------------------|-------------------------------------------|
    | 1 | has ``with_output_name(name)``           | that method (the plugin's own rules and   |
    |   | (:class:`RenamesOutput`)                 | validators apply; no compile)             |
    | 2 | has not                                  | its catalog compiles the renamed entry    |
    |   |                                          | again (the same version)                  |

Both give what ``compile_run`` gives for the document with ``output.name`` replaced in
the entry: the document's authored entry is renamed too.  A name the component refuses
is a ``RunConfigError`` at ``plugins.<alias>.config.output.name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import attrs

from fastsim_contract.run_compiler import (
    CompiledRun,
    ComponentCatalog,
    ComponentConfig,
    discover_catalogs,
)
from fastsim_contract.run_errors import RunConfigError, RunIssue

__all__ = ["RenamesOutput", "with_output_name"]


@runtime_checkable
class RenamesOutput(Protocol):
    """A compiled config that renames its primary output itself (row 1; optional)."""

    def with_output_name(self, name: str) -> ComponentConfig:
        """This config with its ``output.name`` set to ``name`` (``ValueError``: refused)."""
        ...


def with_output_name(
    compiled: CompiledRun, alias: str, name: str, catalogs: Mapping[str, ComponentCatalog] | None = None,
) -> CompiledRun:
    """``compiled`` with plugin ``alias``'s primary output named ``name`` (module table).

    ``catalogs`` serve row 2 (discovered when needed and not given); ``KeyError`` for an
    alias the Run does not have."""
    entry = next((e for e in compiled.run.plugins if e.alias == alias), None)
    component = next((c for c in compiled.components if c.alias == alias), None)
    if entry is None or component is None:
        raise KeyError(alias)
    authored = dict(entry.config)
    output = authored.get("output")
    authored["output"] = {**(dict(output) if isinstance(output, Mapping) else {}), "name": name}
    renamed = attrs.evolve(entry, config=authored)
    run = attrs.evolve(compiled.run, plugins=tuple(renamed if e is entry else e for e in compiled.run.plugins))
    rename = getattr(component.config, "with_output_name", None)
    if callable(rename):
        try:
            config: ComponentConfig = rename(name)
        except ValueError as exc:
            raise RunConfigError([RunIssue(f"plugins.{alias}.config.output.name", str(exc))]) from None
    else:
        catalog = (catalogs if catalogs is not None else discover_catalogs())[component.component_id]
        config = catalog.compile(authored, run=run, path_prefix=f"plugins.{alias}.config", version=component.version)
    ours = attrs.evolve(component, config=config)
    return attrs.evolve(compiled, run=run, components=tuple(ours if c is component else c for c in compiled.components))
