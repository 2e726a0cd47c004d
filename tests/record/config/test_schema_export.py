"""The exported JSON Schema under contracts/ is current and agrees with the models."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fastsim_record.config import OutputConfig, RecordConfig
from fastsim_record.config.catalog import CATALOG
from fastsim_record.config.schema import config_json_schema, render_schema

ROOT = Path(__file__).resolve().parents[3]
EXPORTED = ROOT / "contracts" / "record-config.schema.json"


def _defaults(schema: dict[str, object]) -> object:
    if "properties" in schema:
        props = schema["properties"]
        assert isinstance(props, dict)
        return {k: _defaults(v) for k, v in props.items()}
    return schema.get("default")


def test_committed_schema_is_current() -> None:
    """contracts/record-config.schema.json equals a fresh export (run `python -m fastsim_record.config.schema`)."""
    assert EXPORTED.read_text(encoding="utf-8") == render_schema()


def test_exported_schema_is_the_latest_manifests_schema() -> None:
    """The exported file is the 0.3.12 manifest's config schema."""
    assert json.loads(EXPORTED.read_text(encoding="utf-8")) == CATALOG.manifest("0.3.12").config_schema


def test_schema_defaults_match_the_model_defaults() -> None:
    """Every schema default equals the effective default config (JPEG quality aside)."""
    assert _defaults(config_json_schema()) == RecordConfig().to_mapping()


def test_schema_forbids_unknown_keys_everywhere() -> None:
    """Every object in the schema has additionalProperties false or a typed value schema."""
    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object":
                assert "additionalProperties" in node or "maxProperties" in node or node.get("default") == {}
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(config_json_schema())


@pytest.mark.parametrize("name", ["episode.fsr", "source.fsr", ".hidden", ".fsr", "x.incomplete", "x.incomplete.fsr", "a b.fsr", "..", ".", "a/b", "a\\b", " x", "x "])
def test_schema_name_pattern_agrees_with_the_validator(name: str) -> None:
    """The schema's output.name pattern accepts exactly what the bare-file-name validator accepts."""
    pattern = config_json_schema()["properties"]["output"]["properties"]["name"]["pattern"]
    try:
        OutputConfig(name)
        valid = True
    except ValueError:
        valid = False
    assert bool(re.match(pattern, name)) is valid


def test_schema_camera_alias_pattern_is_the_rules() -> None:
    """The schema's camera alias pattern is the compiler's alias rule."""
    from fastsim_record.config.rules import _ALIAS

    cameras = config_json_schema()["properties"]["streams"]["properties"]["cameras"]
    assert cameras["propertyNames"]["pattern"] == f"^{_ALIAS.pattern}$"
