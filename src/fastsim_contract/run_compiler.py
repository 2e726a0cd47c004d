"""Core's side of compilation: component catalogs, manifests and ``compile_run``.

Core knows no plugin.  Installed packages register a *component catalog* under the
``fastsim.components`` entry-point group; a catalog satisfies ``ComponentCatalog``
(every historical manifest of one component, keyed by version) and compiles an
authored config mapping into that component's typed config.

Version selection for a plugin entry ``plugins.<alias>: {use: URI}``:

    | # | Run has ``lock.components[URI]``  | selected version                        |
    |---|-----------------------------------|-----------------------------------------|
    | 1 | no                                | ``catalog.latest`` (new compilation)    |
    | 2 | yes, a version the catalog holds  | that version (its own manifest/schema)  |
    | 3 | yes, unknown to the catalog       | issue at ``lock.components.<URI>``      |

Every issue of every plugin is collected; ``compile_run`` raises one
``RunConfigError`` listing them all, or returns a ``CompiledRun`` whose ``lock`` pins
every selected component (so re-compiling it later selects the same manifests).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

import attrs

from fastsim_contract.run import RunDocument, RunLock
from fastsim_contract.run_errors import RunConfigError, RunIssue
from fastsim_contract.run_structure import unknown_key_message

__all__ = [
    "COMPONENTS_ENTRY_POINT_GROUP",
    "CompiledComponent",
    "CompiledRun",
    "ComponentCatalog",
    "ComponentConfig",
    "ComponentManifest",
    "RecordingSources",
    "compile_run",
    "discover_catalogs",
]

COMPONENTS_ENTRY_POINT_GROUP = "fastsim.components"


@attrs.frozen
class RecordingSources:
    """A manifest's claim on Core's global recording sources.

    ``sole_ordered_capture_owner``: the component is the one consumer for which Core
    assigns contiguous ``capture_sequence`` values (selected observation channels and
    generation barriers).  ``sources`` are the global sources it captures;
    ``mandatory`` those that may not be switched off by config.
    """

    sole_ordered_capture_owner: bool
    sources: tuple[str, ...]
    mandatory: tuple[str, ...] = ()


@attrs.frozen
class ComponentManifest:
    """What one version of a component declares to Core."""

    component_id: str
    version: str
    role: str
    recording_sources: RecordingSources | None
    grants: tuple[str, ...]
    finalizer_required: bool
    config_schema: Mapping[str, Any]
    summary: str = ""


@runtime_checkable
class ComponentConfig(Protocol):
    """A compiled, typed component config as Core sees it."""

    def required_grants(self, scene_numeric_channels: Collection[str]) -> frozenset[str]:
        """The grants to request, given the numeric channels the scene declares."""
        ...

    def to_mapping(self) -> dict[str, Any]:
        """The effective config as plain YAML/JSON-ready data."""
        ...


class ComponentCatalog(Protocol):
    """Every historical manifest of one component, and its config compiler."""

    @property
    def component_id(self) -> str:
        """The component URI, e.g. ``plugin://fastsim/record``."""
        ...

    @property
    def versions(self) -> tuple[str, ...]:
        """Every version the catalog holds, oldest first."""
        ...

    @property
    def latest(self) -> str:
        """The version new compilations select."""
        ...

    def manifest(self, version: str) -> ComponentManifest:
        """The manifest of ``version`` (``KeyError`` if unknown)."""
        ...

    def compile(
        self,
        config: Mapping[str, Any],
        *,
        run: RunDocument,
        path_prefix: str,
        version: str,
    ) -> ComponentConfig:
        """Merge defaults and validate; raise ``RunConfigError`` with full paths."""
        ...


@attrs.frozen
class CompiledComponent:
    """One selected plugin after compilation."""

    alias: str
    component_id: str
    version: str
    manifest: ComponentManifest
    config: ComponentConfig

    def required_grants(self, scene_numeric_channels: Collection[str]) -> frozenset[str]:
        """The grants this component requests for a scene with these numeric channels."""
        return self.config.required_grants(scene_numeric_channels)


@attrs.frozen
class CompiledRun:
    """A compiled Run: the document, every compiled plugin, and the effective lock."""

    run: RunDocument
    components: tuple[CompiledComponent, ...]
    lock: RunLock

    def component(self, alias: str) -> CompiledComponent:
        """The compiled plugin with this alias (``KeyError`` if absent)."""
        for compiled in self.components:
            if compiled.alias == alias:
                return compiled
        raise KeyError(alias)

    def components_using(self, component_id: str) -> tuple[CompiledComponent, ...]:
        """Every compiled plugin of this component, in authored order."""
        return tuple(c for c in self.components if c.component_id == component_id)


def discover_catalogs() -> dict[str, ComponentCatalog]:
    """Installed catalogs from the ``fastsim.components`` entry points, by component id."""
    found: dict[str, ComponentCatalog] = {}
    for ep in entry_points(group=COMPONENTS_ENTRY_POINT_GROUP):
        catalog = ep.load()
        found[catalog.component_id] = catalog
    return found


def compile_run(
    run: RunDocument, catalogs: Mapping[str, ComponentCatalog] | None = None
) -> CompiledRun:
    """Compile every plugin of ``run``; ``RunConfigError`` lists every issue."""
    if catalogs is None:
        catalogs = discover_catalogs()
    issues: list[RunIssue] = []
    compiled: list[CompiledComponent] = []
    pins: dict[str, str] = {}
    for uri, version in run.lock.components.items():
        catalog = catalogs.get(uri)
        if catalog is not None and version not in catalog.versions:
            issues.append(RunIssue(
                f"lock.components.{uri}",
                f"{uri} has no version {version!r}; known versions are "
                + ", ".join(catalog.versions),
            ))
    for entry in run.plugins:
        catalog = catalogs.get(entry.use)
        if catalog is None:
            known = unknown_key_message(entry.use, catalogs).replace("unknown key", "no installed component provides it")
            issues.append(RunIssue(f"plugins.{entry.alias}.use", known))
            continue
        version = run.lock.components.get(entry.use, catalog.latest)
        if version not in catalog.versions:
            continue  # reported once, at the lock
        try:
            config = catalog.compile(
                entry.config, run=run, path_prefix=f"plugins.{entry.alias}.config", version=version
            )
        except RunConfigError as exc:
            issues.extend(exc.issues)
            continue
        pins[entry.use] = version
        compiled.append(CompiledComponent(
            alias=entry.alias,
            component_id=entry.use,
            version=version,
            manifest=catalog.manifest(version),
            config=config,
        ))
    if issues:
        raise RunConfigError(issues)
    return CompiledRun(run=run, components=tuple(compiled), lock=RunLock({**run.lock.components, **pins}))
