"""The Record config's JSON Schema (draft 2020-12), one per catalog version.

``config_json_schema(version)`` is the schema each manifest declares;
``export_schema(path)`` writes the current (0.3.12) one to
``contracts/record-config.schema.json`` (``python -m fastsim_record.config.schema``).
The compiler, not this schema, produces the user-facing messages; the schema is the
machine-readable statement of the same rules for tools and other hosts.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import attrs

from fastsim_record.config.model import (
    BATCH_MAX_BYTES,
    BATCH_MAX_ITEMS,
    BATCH_SPAN_MAX_S,
    BATCH_SPAN_MIN_S,
    CAMERA_ENCODINGS,
    DEFAULT_JPEG_QUALITY,
    FINALIZE_MAX_TIMEOUT_S,
    INTEGRITY_MODES,
    LANE_MAX_BYTES,
    LANE_MAX_ITEMS,
    OBSERVATION_MODES,
    OVERLOAD_POLICIES,
    BatchingConfig,
    FinalizeConfig,
    QueuesConfig,
    RateCaptureConfig,
)
from fastsim_record.config.versions import LATEST, profile

__all__ = ["SCHEMA_FILE", "config_json_schema", "export_schema", "render_schema"]

SCHEMA_FILE = os.path.join("contracts", "record-config.schema.json")

_CHANNEL = {"type": "string", "minLength": 1}
_POS_INT = {"type": "integer", "exclusiveMinimum": 0}
_POS_NUM = {"type": "number", "exclusiveMinimum": 0}
_EVERY_N = {"type": "integer", "const": 1, "default": 1}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def _rate_capture(description: str) -> dict[str, Any]:
    default = RateCaptureConfig()
    schema = _object({
        "enabled": {"type": "boolean", "default": default.enabled},
        "rate_hz": {**_POS_NUM, "default": default.rate_hz},
    })
    schema["description"] = description
    return schema


def _camera(codecs: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "rgb": _CHANNEL,
        "intrinsics": _CHANNEL,
        "translation": _CHANNEL,
        "quaternion_xyzw": _CHANNEL,
        "required": {"type": "boolean", "default": True},
        "every_n_samples": _EVERY_N,
    }
    if codecs:
        props["encoding"] = {"enum": list(CAMERA_ENCODINGS), "default": "jpeg"}
        props["quality"] = {"type": "integer", "minimum": 1, "maximum": 100, "default": DEFAULT_JPEG_QUALITY}
    schema = _object(props, ("rgb", "intrinsics", "translation", "quaternion_xyzw"))
    if codecs:
        schema["if"] = {"properties": {"encoding": {"const": "png"}}, "required": ["encoding"]}
        schema["then"] = {"not": {"required": ["quality"]}}
    return schema


def config_json_schema(version: str = LATEST) -> dict[str, Any]:
    """The JSON Schema of the Record config accepted by catalog ``version``."""
    p = profile(version)
    source = {"type": "boolean", "default": True}
    if p.strict_prepare_contract:
        source = {"const": True, "default": True}
    streams: dict[str, Any] = {
        "lifecycle": source,
        "events": source,
        "control": source,
        "observations": _object({
            "mode": {"enum": list(OBSERVATION_MODES), "default": "all_numeric"},
            "include": {
                "type": "object",
                "default": {},
                "additionalProperties": _object({
                    "channel": _CHANNEL,
                    "required": {"type": "boolean", "default": True},
                    "every_n_samples": _EVERY_N,
                }, ("channel",)),
            },
        }),
        "cameras": {
            "type": "object",
            "default": {},
            "propertyNames": {"pattern": "^[A-Za-z0-9_][A-Za-z0-9_-]*$"},
            "additionalProperties": _camera(p.camera_codecs),
        },
    }
    if p.render_state:
        streams["render_state"] = _rate_capture("optional render.state trajectory for camera-only Replay")
    if p.geometry:
        streams["geometry"] = _rate_capture("optional scene geometry (scene.geometry@2) for FSR Viewer")
    queues = QueuesConfig()
    lanes = {
        lane.name: _object({
            "max_items": {**_POS_INT, "maximum": LANE_MAX_ITEMS, "default": getattr(queues, lane.name).max_items},
            "max_bytes": {**_POS_INT, "maximum": LANE_MAX_BYTES, "default": getattr(queues, lane.name).max_bytes},
            "overload": {
                "enum": ["fail_run"] if lane.name == "critical" else list(OVERLOAD_POLICIES),
                "default": "fail_run",
            },
        })
        for lane in attrs.fields(QueuesConfig)
    }
    batching, finalize = BatchingConfig(), FinalizeConfig()
    postprocessors: dict[str, Any] = {"type": "object", "default": {}}
    preserve: dict[str, Any] = {"type": "boolean", "default": True}
    if p.strict_prepare_contract:
        postprocessors["maxProperties"] = 0
        preserve = {"const": True, "default": True}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"plugin://fastsim/record/{version}/config.schema.json",
        "title": f"plugin://fastsim/record {version} config",
        "description": p.summary,
        **_object({
            "integrity": {"enum": list(INTEGRITY_MODES), "default": "structural"},
            "output": _object({
                "name": {
                    "type": "string",
                    "pattern": "^(?!\\.)(?!.*\\.incomplete$)[^/\\\\\\x00-\\x1f\\x7f\\s](?:[^/\\\\\\x00-\\x1f\\x7f]*[^/\\\\\\x00-\\x1f\\x7f\\s])?$",
                    "maxLength": 244,
                    "default": "episode.fsr",
                },
            }),
            "streams": _object(streams),
            "queues": _object(lanes),
            "batching": _object({
                "max_items": {**_POS_INT, "maximum": BATCH_MAX_ITEMS, "default": batching.max_items},
                "max_bytes": {**_POS_INT, "maximum": BATCH_MAX_BYTES, "default": batching.max_bytes},
                "max_sim_duration_s": {
                    "type": "number", "minimum": BATCH_SPAN_MIN_S, "maximum": BATCH_SPAN_MAX_S,
                    "default": batching.max_sim_duration_s,
                },
            }),
            "finalize": _object({
                "requested_timeout_s": {
                    **_POS_NUM, "maximum": FINALIZE_MAX_TIMEOUT_S, "default": finalize.requested_timeout_s,
                },
                "preserve_incomplete": preserve,
                "postprocessors": postprocessors,
            }),
        }),
    }


def render_schema(version: str = LATEST) -> str:
    """The schema as the committed file's exact text."""
    return json.dumps(config_json_schema(version), indent=2, sort_keys=False) + "\n"


def export_schema(path: str | os.PathLike[str] = SCHEMA_FILE) -> None:
    """Write the current schema to ``path``."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render_schema())


if __name__ == "__main__":  # pragma: no cover
    export_schema(sys.argv[1] if len(sys.argv) > 1 else SCHEMA_FILE)
