"""Compile an authored Record config into the effective ``RecordConfig``.

The only place authored data becomes typed values (a private cattrs converter with
``forbid_extra_keys``).  Steps, each collecting issues rather than stopping:

    1. the config must be a mapping (absent or ``null`` means ``{}``); a partially
       authored lane gets that lane's default sizes
    2. keys the selected version does not have yet  (rules 1-3)
    3. structure: unknown keys (nearest key suggested; a section's key authored at the
       top level, such as ``cameras``, points to ``streams.cameras``), types, validators
    4. cross-field, Run-level and version rules     (rules 4-14).  If 3 failed, the rules
       run on a *repaired* copy (each reported key removed, so its default applies;
       a missing required key removes its parent entry) and a rule issue is dropped
       when any path it was judged from (``rules.rule_findings``) was repaired, so one
       document's structural and rule errors are reported together without guesses
    5. compiler defaults: JPEG quality 92; legacy (< 0.3.6) cameras record raw RGB

Every issue is one ``path: message`` line with the full dotted path from the Run root.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from fastsim_contract.run import RunDocument
from fastsim_contract.run_errors import RunIssue
from fastsim_contract.run_structure import (
    describe,
    strict_converter,
    structure_issues,
    without_paths,
)
from fastsim_record.config.model import (
    DEFAULT_JPEG_QUALITY,
    LEGACY_RAW_ENCODING,
    CameraConfig,
    QueuesConfig,
    RecordConfig,
)
from fastsim_record.config.rules import check_available_keys, check_rules, rule_findings
from fastsim_record.config.versions import LATEST, SchemaProfile, profile
from fastsim_record.errors import ConfigError

__all__ = ["compile_record_config"]

_CONVERTER = strict_converter()
_DEFAULT_QUEUES = QueuesConfig()


def _with_lane_defaults(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """Merge each lane's own default sizes into a partially authored lane."""
    queues = raw.get("queues")
    if not isinstance(queues, Mapping):
        return raw
    merged: dict[str, Any] = dict(queues)
    for lane in attrs.fields(QueuesConfig):
        authored = queues.get(lane.name)
        if isinstance(authored, Mapping):
            default = getattr(_DEFAULT_QUEUES, lane.name)
            merged[lane.name] = {
                "max_items": default.max_items,
                "max_bytes": default.max_bytes,
                **authored,
            }
    return {**raw, "queues": merged}


def _rules_despite(
    raw: Mapping[str, Any], bad_paths: list[str], *, run: RunDocument, schema: SchemaProfile
) -> list[RunIssue]:
    """Rule issues of a copy with every reported key removed (see step 4)."""
    structured, problems = structure_issues(
        _CONVERTER, _with_lane_defaults(without_paths(raw, bad_paths)), RecordConfig
    )
    if structured is None or problems:
        return []

    def guessed(inputs: tuple[str, ...]) -> bool:
        return any(
            bad == read or bad.startswith(read + ".") or read.startswith(bad + ".")
            for bad in bad_paths
            for read in inputs
        )

    return [i for i, inputs in rule_findings(structured, run=run, profile=schema) if not guessed(inputs)]


def _section_keys() -> dict[str, str]:
    attrs.resolve_types(RecordConfig)
    found: dict[str, str] = {}
    for section in attrs.fields(RecordConfig):
        if isinstance(section.type, type) and attrs.has(section.type):
            for field in attrs.fields(section.type):
                found.setdefault(field.name, f"{section.name}.{field.name}")
    return found


#: A key of a section (``cameras`` -> ``streams.cameras``), by name.
_SECTION_KEYS = _section_keys()


def _misplaced(path: str, message: str) -> str:
    """An unknown top-level key that belongs one section down points there."""
    if message.startswith("unknown key") and "did you mean" not in message and path in _SECTION_KEYS:
        return f"unknown key; did you mean '{_SECTION_KEYS[path]}'?"
    return message


def _prefixed(prefix: str, issue: RunIssue) -> RunIssue:
    if not prefix:
        return issue
    return RunIssue(f"{prefix}.{issue.path}" if issue.path else prefix, issue.message)


def _effective_camera(camera: CameraConfig, schema: SchemaProfile) -> CameraConfig:
    if not schema.camera_codecs:
        return attrs.evolve(camera, encoding=LEGACY_RAW_ENCODING, quality=None)
    if camera.encoding == "jpeg" and camera.quality is None:
        return attrs.evolve(camera, quality=DEFAULT_JPEG_QUALITY)
    return camera


def _effective(config: RecordConfig, schema: SchemaProfile) -> RecordConfig:
    cameras = {alias: _effective_camera(cam, schema) for alias, cam in config.streams.cameras.items()}
    return attrs.evolve(config, streams=attrs.evolve(config.streams, cameras=cameras))


def compile_record_config(
    raw: Mapping[str, Any] | None,
    *,
    run: RunDocument,
    version: str = LATEST,
    path_prefix: str = "plugins.record.config",
) -> RecordConfig:
    """The effective config of one Record plugin entry, or ``ConfigError`` with every issue."""
    schema = profile(version)
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError([RunIssue(path_prefix, f"must be a mapping (got {describe(raw)})")])
    issues = list(check_available_keys(raw, schema))
    structured, problems = structure_issues(_CONVERTER, _with_lane_defaults(raw), RecordConfig)
    issues.extend(RunIssue(p.path, _misplaced(p.path, p.message)) for p in problems)
    if structured is not None:
        issues.extend(check_rules(structured, run=run, profile=schema))
    else:
        issues.extend(_rules_despite(raw, [p.path for p in problems], run=run, schema=schema))
    if issues:
        raise ConfigError([_prefixed(path_prefix, issue) for issue in issues])
    assert structured is not None  # noqa: S101 - narrowed: no issues means structured
    return _effective(structured, schema)
