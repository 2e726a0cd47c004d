"""The FastSim v2 Run document: what a user authors, as frozen values.

A Run is YAML::

    schema: fastsim/2             # required, exactly this
    name: recorded-run            # required, non-empty
    backend: synthetic            # required, non-empty (e.g. synthetic, mujoco, isaaclab)
    scenario: {...}               # free-form mapping, interpreted by the host and backend
    runtime:
      sensor_hz: 120.0            # capture cadence: one published tick per sensor sample, > 0
      rate_policy: exact          # exact | nearest_tick (see RATE_POLICIES)
      physics_hz: null            # optional physics rate, > 0 (null: the host's default)
      duration_s: null            # optional episode length in simulation seconds, > 0
      seed: null                  # optional integer 0 .. 2**63-1: drives the scene's
                                  # randomization (``fsr record --seed`` overrides it)
      output:                     # the trusted Core RunOutputPolicy
        integrity: none           # none | sha256
        preserve_incomplete: true
        publish_incomplete: false
        payload_crc: false        # true: a CRC-32C of every batch's payload bytes
    plugins:
      record:                     # alias
        use: plugin://fastsim/record
        config: {...}             # the component's config; defaults merged by the compiler
    lock:                         # optional: pins component versions
      components:
        plugin://fastsim/record: 0.3.8

An output name may be a template (``render_output_name``): ``{name}`` (the Run's
name), ``{seed}`` and ``{episode}``, each with an optional format spec such as
``{episode:05d}``; anything else in braces is an error (``output_name_problem``).

The output policy is authored at ``runtime.output``: it belongs to the Run (to Core),
not to any plugin, so a plugin cannot select a host path or override preservation.

``load_run(path)`` / ``parse_run(text)`` read YAML (syntax errors name the line and
column; duplicate keys are rejected) and return a ``RunDocument``, or raise
``RunConfigError`` listing every ``path: message`` issue.  Compilation against the
installed component catalogs lives in ``fastsim_contract.run_compiler``.
"""

from __future__ import annotations

import os
import stat
import string
from collections.abc import Mapping
from typing import Any

import attrs
import yaml

from fastsim_contract.output_policy import INTEGRITY_POLICIES, RunOutputPolicy
from fastsim_contract.run_errors import RunConfigError, RunIssue
from fastsim_contract.run_structure import (
    describe,
    non_empty,
    one_of,
    optional_positive_number,
    positive_number,
    strict_converter,
    structure_issues,
)

__all__ = [
    "INTEGRITY_POLICIES",
    "RATE_POLICIES",
    "RUN_SCHEMA",
    "PluginEntry",
    "RunDocument",
    "RunLock",
    "RunOutputPolicy",
    "RuntimeSpec",
    "OUTPUT_NAME_FIELDS",
    "SEED_MAX",
    "is_template",
    "load_run",
    "output_name_problem",
    "render_output_name",
    "parse_run",
    "parse_run_data",
    "read_run_text",
    "run_from_mapping",
    "run_to_mapping",
]

RUN_SCHEMA = "fastsim/2"

#: ``runtime.rate_policy`` values:
#:   exact        the sensor period must be a whole number of physics steps; the host
#:                rejects the Run at prepare otherwise
#:   nearest_tick each sensor sample is taken on the physics tick nearest its period
RATE_POLICIES = ("exact", "nearest_tick")

#: The largest seed (seeds are recorded as signed 64-bit integers).
SEED_MAX = 2**63 - 1

#: The fields an output-name template may use.
OUTPUT_NAME_FIELDS = ("name", "seed", "episode")


def _fields(template: str) -> list[tuple[str, str]]:
    """(field, format spec) of every replacement field; ``ValueError`` on bad braces."""
    found = []
    for _, field, spec, conversion in string.Formatter().parse(template):
        if field is None:
            continue
        if conversion:
            raise ValueError(f"conversion !{conversion} is not allowed in an output name")
        if field not in OUTPUT_NAME_FIELDS:
            raise ValueError(
                f"unknown field {{{field}}} (use {', '.join('{' + f + '}' for f in OUTPUT_NAME_FIELDS)})"
            )
        if spec and ("{" in spec or "}" in spec):
            raise ValueError("nested fields are not allowed in an output name")
        found.append((field, spec or ""))
    return found


def output_name_problem(template: str) -> str | None:
    """Why ``template`` is not a usable output-name template (``None`` when it is)."""
    try:
        _fields(template)
        template.format(name="run", seed=0, episode=0)
    except (ValueError, IndexError, KeyError) as exc:
        return f"is not a valid output-name template: {exc}"
    return None


def is_template(template: str) -> bool:
    """Whether ``template`` has any replacement field."""
    try:
        return bool(_fields(template))
    except ValueError:
        return True


def render_output_name(template: str, *, name: str, seed: int, episode: int) -> str:
    """The output name of one episode (``ValueError`` for a bad template)."""
    _fields(template)
    return template.format(name=name, seed=seed, episode=episode)


def _seed(_: object, __: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and not 0 <= value <= SEED_MAX:
        raise ValueError(f"must be an integer from 0 through 2**63-1 (got {describe(value)})")


def _schema(_: object, __: attrs.Attribute[Any], value: str) -> None:
    if value != RUN_SCHEMA:
        raise ValueError(f"must be '{RUN_SCHEMA}' (got {describe(value)})")


def _component_uri(_: object, __: attrs.Attribute[Any], value: str) -> None:
    scheme, sep, rest = value.partition("://")
    if not sep or not scheme or not rest:
        raise ValueError(f"must be a component URI such as 'plugin://fastsim/record' (got {describe(value)})")


@attrs.frozen
class RuntimeSpec:
    """Core runtime settings: capture cadence, optional physics rate and length, output policy."""

    sensor_hz: float = attrs.field(default=120.0, validator=positive_number)
    rate_policy: str = attrs.field(default="exact", validator=one_of(RATE_POLICIES))
    physics_hz: float | None = attrs.field(default=None, validator=optional_positive_number)
    duration_s: float | None = attrs.field(default=None, validator=optional_positive_number)
    seed: int | None = attrs.field(default=None, validator=_seed)
    output: RunOutputPolicy = attrs.field(factory=RunOutputPolicy)


@attrs.frozen
class _PluginSpec:
    use: str = attrs.field(validator=_component_uri)
    config: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class PluginEntry:
    """One selected plugin: its alias in the Run, component URI and raw authored config."""

    alias: str
    use: str
    config: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class RunLock:
    """Pinned component versions: component URI -> version."""

    components: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class _RunSpec:
    schema: str = attrs.field(validator=_schema)
    name: str = attrs.field(validator=non_empty)
    backend: str = attrs.field(validator=non_empty)
    scenario: Mapping[str, Any] = attrs.field(factory=dict)
    runtime: RuntimeSpec = attrs.field(factory=RuntimeSpec)
    plugins: Mapping[str, _PluginSpec] = attrs.field(factory=dict)
    lock: RunLock = attrs.field(factory=RunLock)


@attrs.frozen
class RunDocument:
    """A parsed FastSim v2 Run (schema ``fastsim/2``)."""

    name: str
    backend: str
    scenario: Mapping[str, Any] = attrs.field(factory=dict)
    runtime: RuntimeSpec = attrs.field(factory=RuntimeSpec)
    plugins: tuple[PluginEntry, ...] = ()
    lock: RunLock = attrs.field(factory=RunLock)
    source: str = "<run>"
    schema: str = RUN_SCHEMA

    def plugin(self, alias: str) -> PluginEntry:
        """The plugin entry with this alias (``KeyError`` if absent)."""
        for entry in self.plugins:
            if entry.alias == alias:
                return entry
        raise KeyError(alias)

    def with_backend(self, backend: str) -> RunDocument:
        """The same Run on another backend (``fsr record --backend``)."""
        return attrs.evolve(self, backend=backend)


_CONVERTER = strict_converter()


def run_from_mapping(data: object, *, source: str = "<run>") -> RunDocument:
    """Structure an already-loaded Run mapping; ``RunConfigError`` lists every issue."""
    spec, issues = structure_issues(_CONVERTER, data, _RunSpec)
    if spec is None:
        raise RunConfigError(issues)
    return RunDocument(
        schema=spec.schema,
        name=spec.name,
        backend=spec.backend,
        scenario=spec.scenario,
        runtime=spec.runtime,
        plugins=tuple(PluginEntry(alias, p.use, p.config) for alias, p in spec.plugins.items()),
        lock=spec.lock,
        source=source,
    )


def run_to_mapping(run: RunDocument) -> dict[str, Any]:
    """The Run as plain YAML-ready data (inverse of ``run_from_mapping``)."""
    data: dict[str, Any] = {
        "schema": run.schema,
        "name": run.name,
        "backend": run.backend,
        "scenario": dict(run.scenario),
        "runtime": attrs.asdict(run.runtime),
        "plugins": {p.alias: {"use": p.use, "config": dict(p.config)} for p in run.plugins},
    }
    if run.lock.components:
        data["lock"] = {"components": dict(run.lock.components)}
    return data


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys instead of keeping the last."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        try:
            duplicate = key in seen
        except TypeError:
            continue
        if duplicate:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)


def parse_yaml(text: str, *, source: str = "<run>") -> object:
    """Load YAML; a syntax error becomes one issue naming the line and column."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise RunConfigError([RunIssue(source, f"YAML syntax error at {where}{problem}")]) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        where = f"line {line}, column {column}"
        raise RunConfigError([RunIssue(
            source, f"YAML syntax error at {where}: unacceptable character #x{exc.character:04x}"
            if isinstance(exc.character, int) else f"YAML syntax error at {where}: {exc.reason}"
        )]) from None
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise RunConfigError([RunIssue(source, f"YAML syntax error: {detail}")]) from None
    except RecursionError:
        raise RunConfigError([RunIssue(source, "YAML nesting is too deep to load")]) from None


def parse_run_data(text: str, *, source: str = "<run>") -> Mapping[str, Any]:
    """The Run's YAML as a mapping, not yet structured (``RunConfigError`` otherwise)."""
    data = parse_yaml(text, source=source)
    if not isinstance(data, Mapping):
        raise RunConfigError([RunIssue(source, f"a Run must be a YAML mapping (got {describe(data)})")])
    return data


def parse_run(text: str, *, source: str = "<run>") -> RunDocument:
    """Parse a Run from YAML text."""
    return run_from_mapping(parse_run_data(text, source=source), source=source)


#: A Run is a short YAML document; anything larger is refused before it is read.
MAX_RUN_BYTES = 16 * 1024 * 1024


def read_run_text(path: str | os.PathLike[str]) -> str:
    """A Run file's text; an unreadable file is one issue, never a traceback.

    Only a regular file is opened: a FIFO would block until a writer appears and a
    device such as ``/dev/zero`` never ends, so both are refused by their type, and a
    file over ``MAX_RUN_BYTES`` by its size.
    """
    source = os.fspath(path)
    try:
        with open(path, "rb", opener=_open_nonblocking) as handle:
            info = os.fstat(handle.fileno())  # open() itself refuses a directory
            if not stat.S_ISREG(info.st_mode):
                raise RunConfigError([RunIssue(source, "cannot read the Run file: not a regular file")])
            if info.st_size > MAX_RUN_BYTES:
                raise RunConfigError([RunIssue(
                    source, f"cannot read the Run file: {info.st_size} bytes is over the "
                    f"{MAX_RUN_BYTES}-byte limit for a Run",
                )])
            data = handle.read(MAX_RUN_BYTES + 1)
        if len(data) > MAX_RUN_BYTES:
            raise RunConfigError([RunIssue(
                source, f"cannot read the Run file: over the {MAX_RUN_BYTES}-byte limit for a Run",
            )])
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RunConfigError([RunIssue(source, f"cannot read the Run file: {reason}")]) from None


def _open_nonblocking(file: str, flags: int) -> int:
    """``open`` with O_NONBLOCK, so opening a FIFO with no writer returns at once."""
    return os.open(file, flags | getattr(os, "O_NONBLOCK", 0))


def load_run(path: str | os.PathLike[str]) -> RunDocument:
    """Read and parse a Run file; an unreadable file is one issue, never a traceback."""
    return parse_run(read_run_text(path), source=os.fspath(path))
