"""Core's side of compilation: component catalogs, manifests and ``compile_run``.

Core knows no plugin.  Installed packages register a *component catalog* under the
``fastsim.components`` entry-point group; a catalog is a ``ComponentCatalog``
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

``load_and_compile(path)`` reads a Run file and compiles it, reporting the Run-level
issues and the plugins' config issues together: when the document itself has issues,
the plugins are compiled against a stand-in Run with every reported key removed (its
default applies).  Component issues are kept except where the stand-in guessed: none
when the lock was repaired (the version is unknown), and none citing a repaired
``runtime`` key.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

import attrs

from fastsim_contract.run import (
    RUN_SCHEMA,
    RunDocument,
    RunLock,
    parse_run_data,
    read_run_text,
    run_from_mapping,
)
from fastsim_contract.run_errors import RunConfigError, RunIssue
from fastsim_contract.run_structure import unknown_key_message, without_paths

__all__ = [
    "COMPONENTS_ENTRY_POINT_GROUP",
    "CompiledComponent",
    "CompiledRun",
    "ComponentCatalog",
    "ComponentConfig",
    "ConfigCompiler",
    "ComponentManifest",
    "RecordingSources",
    "compile_run",
    "discover_catalogs",
    "entry_point_name",
    "load_and_compile",
]

COMPONENTS_ENTRY_POINT_GROUP = "fastsim.components"


def entry_point_name(component_id: str) -> str:
    """The entry-point name of a component in both discovery groups.

    ``plugin://<ns>/<name>`` is registered as ``<ns>.<name>``: ``plugin://fastsim/record``
    is ``fastsim.record`` in ``fastsim.components`` and in ``fastsim.plugins``.
    """
    _, _, path = component_id.partition("://")
    return ".".join(part for part in path.split("/") if part)


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


#: A component's config compiler: ``(config, run, path_prefix, version)`` -> its typed
#: config; it raises ``RunConfigError`` with full paths.
ConfigCompiler = Callable[[Mapping[str, Any], RunDocument, str, str], ComponentConfig]


@attrs.frozen
class ComponentCatalog:
    """Every historical manifest of one component (``manifests``: version -> manifest,
    oldest first), the version new compilations select, and its config compiler."""

    component_id: str  # the component URI, e.g. ``plugin://fastsim/record``
    manifests: Mapping[str, ComponentManifest]
    latest: str
    compiler: ConfigCompiler

    @property
    def versions(self) -> tuple[str, ...]:
        """Every version the catalog holds, oldest first."""
        return tuple(self.manifests)

    def manifest(self, version: str) -> ComponentManifest:
        """The manifest of ``version`` (``KeyError`` if unknown)."""
        return self.manifests[version]

    def compile(self, config: Mapping[str, Any], *, run: RunDocument, path_prefix: str, version: str) -> ComponentConfig:
        """Merge defaults and validate; raise ``RunConfigError`` with full paths."""
        return self.compiler(config, run, path_prefix, version)


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

    def effective_config(self) -> dict[str, Any]:
        """The effective config as plain data, in this version's schema.

        Keys the selected version's schema lacks, and unset (``null``) values, are left
        out, so the result authored under the same lock compiles to the same config.
        """
        within: dict[str, Any] = _within_schema(self.config.to_mapping(), self.manifest.config_schema)
        return within


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


def _within_schema(value: Any, schema: Mapping[str, Any]) -> Any:
    if not isinstance(value, Mapping):
        return value
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if item is None:
            continue
        if isinstance(properties, Mapping) and key in properties:
            out[key] = _within_schema(item, properties[key])
        elif isinstance(extra, Mapping):
            out[key] = _within_schema(item, extra)
        elif properties is None and extra is None:
            out[key] = item
    return out


def discover_catalogs() -> dict[str, ComponentCatalog]:
    """Installed catalogs from the ``fastsim.components`` entry points, by component id.

    A catalog counts only under its own name (``entry_point_name``): Core looks a
    component up by that name, so one registered under another name is not found.
    """
    found: dict[str, ComponentCatalog] = {}
    for ep in entry_points(group=COMPONENTS_ENTRY_POINT_GROUP):
        catalog = ep.load()
        if ep.name == entry_point_name(catalog.component_id):
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
            known = _unknown_component_message(entry.use, catalogs)
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


def _unknown_component_message(uri: str, catalogs: Mapping[str, ComponentCatalog]) -> str:
    if not catalogs:
        return "no installed component provides it; no component catalog is installed"
    nearest = unknown_key_message(uri, catalogs)
    if "did you mean" in nearest:
        return "no installed component provides it;" + nearest.partition(";")[2]
    return "no installed component provides it; installed components are " + ", ".join(
        f"'{c}'" for c in sorted(catalogs)
    )


_STAND_IN_ATTEMPTS = 4
#: Required Run keys no component reads: a stand-in keeps its checks going without them.
_PLACEHOLDERS = {"schema": RUN_SCHEMA, "name": "stand-in", "backend": "stand-in"}


def _issues_despite(
    data: Mapping[str, Any],
    run_issues: Sequence[RunIssue],
    catalogs: Mapping[str, ComponentCatalog],
    source: str,
) -> list[RunIssue]:
    """Component issues of a stand-in Run (see the module header), or none."""
    repaired = [i.path for i in run_issues]
    stand_in: RunDocument | None = None
    for _ in range(_STAND_IN_ATTEMPTS):
        try:
            stand_in = run_from_mapping({**_PLACEHOLDERS, **without_paths(data, repaired)}, source=source)
            break
        except RunConfigError as again:
            repaired.extend(i.path for i in again.issues)
    if stand_in is None or any(p == "lock" or p.startswith("lock.") for p in repaired):
        return []
    runtime_guessed = any(p == "runtime" or p.startswith("runtime.") for p in repaired)
    try:
        compile_run(stand_in, catalogs)
    except RunConfigError as exc:
        return [i for i in exc.issues if not (runtime_guessed and "runtime." in i.message)]
    return []


def load_and_compile(
    path: str | os.PathLike[str], catalogs: Mapping[str, ComponentCatalog] | None = None
) -> CompiledRun:
    """Read, parse and compile a Run file; ``RunConfigError`` lists every issue found."""
    if catalogs is None:
        catalogs = discover_catalogs()
    source = os.fspath(path)
    data = parse_run_data(read_run_text(source), source=source)
    try:
        run = run_from_mapping(data, source=source)
    except RunConfigError as exc:
        raise RunConfigError([*exc.issues, *_issues_despite(data, exc.issues, catalogs, source)]) from None
    return compile_run(run, catalogs)
