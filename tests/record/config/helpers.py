"""Helpers shared by the config tests: build a Run around a Record config and compile it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastsim_contract.run import run_from_mapping
from fastsim_contract.run_compiler import CompiledRun, compile_run
from fastsim_contract.run_errors import RunConfigError
from fastsim_record import COMPONENT_ID
from fastsim_record.config import RecordConfig
from fastsim_record.config.catalog import CATALOG

CAMERA = {
    "rgb": "sensors.overview.camera.rgb",
    "intrinsics": "sensors.overview.camera.intrinsics",
    "translation": "sensors.overview.camera.extrinsics.translation",
    "quaternion_xyzw": "sensors.overview.camera.extrinsics.quaternion_xyzw",
}


def run_mapping(
    config: object = None,
    *,
    runtime: Mapping[str, Any] | None = None,
    version: str | None = None,
) -> dict[str, Any]:
    """A minimal Run mapping selecting Record with ``config``."""
    plugin: dict[str, Any] = {"use": COMPONENT_ID}
    if config is not None:
        plugin["config"] = config
    data: dict[str, Any] = {
        "schema": "fastsim/2",
        "name": "test-run",
        "backend": "synthetic",
        "plugins": {"record": plugin},
    }
    if runtime is not None:
        data["runtime"] = dict(runtime)
    if version is not None:
        data["lock"] = {"components": {COMPONENT_ID: version}}
    return data


def compile_mapping(data: Mapping[str, Any]) -> CompiledRun:
    """Compile a Run mapping against the Record catalog only."""
    return compile_run(run_from_mapping(data), {COMPONENT_ID: CATALOG})


def compile_config(config: object = None, **kwargs: Any) -> RecordConfig:
    """The effective RecordConfig of a Run built around ``config``."""
    compiled = compile_mapping(run_mapping(config, **kwargs)).component("record").config
    assert isinstance(compiled, RecordConfig)
    return compiled


def issues(config: object = None, **kwargs: Any) -> list[str]:
    """Every ``path: message`` line the compiler reports for ``config``."""
    try:
        compile_mapping(run_mapping(config, **kwargs))
    except RunConfigError as exc:
        return [str(issue) for issue in exc.issues]
    raise AssertionError("the config compiled without issues")


def camera(**overrides: Any) -> dict[str, Any]:
    """A valid camera entry with ``overrides``."""
    return {**CAMERA, **overrides}
