"""The Record component catalog: every historical manifest, 0.3.0 through 0.3.12.

``CATALOG`` is the ``fastsim.components`` / ``fastsim.record`` entry point, a
``fastsim_contract.run_compiler.ComponentCatalog``: Core asks it for a version's
manifest and has it compile a plugin entry's authored config.  A Run's lock selects
an earlier version; new compilation selects ``latest`` (0.3.12).

A manifest declares (per version):

    | field              | value                                                       |
    |--------------------|-------------------------------------------------------------|
    | component_id       | plugin://fastsim/record                                     |
    | role               | data_consumer                                               |
    | recording_sources  | sole ordered capture owner of lifecycle, plugin_events,     |
    |                    | control, observations (+ render.state from 0.3.2,           |
    |                    | fluid.emissions from 0.3.11, scene.geometry in 0.3.12);     |
    |                    | the first three mandatory from 0.3.8                        |
    | grants             | the grants it may request; the config decides which it does |
    |                    | (``RecordConfig.required_grants``: Observation only when    |
    |                    | numeric channels are selected)                              |
    | finalizer_required | true                                                        |
    | config_schema      | that version's JSON Schema                                  |
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from fastsim_contract.run import RunDocument
from fastsim_contract.run_compiler import ComponentCatalog, ComponentManifest, RecordingSources
from fastsim_contract.run_errors import RunConfigError
from fastsim_record import COMPONENT_ID
from fastsim_record.config.compile import compile_record_config
from fastsim_record.config.model import (
    GRANT_CAMERA,
    GRANT_OBSERVATION,
    GRANT_OUTPUT,
    GRANT_RENDER_STATE,
    GRANT_SCENE_GEOMETRY,
    RecordConfig,
)
from fastsim_record.config.schema import config_json_schema
from fastsim_record.config.versions import LATEST, VERSIONS, SchemaProfile, profile
from fastsim_record.errors import ConfigError

__all__ = ["CATALOG", "ROLE", "manifest_for", "required_grants"]

ROLE = "data_consumer"
_GLOBAL_SOURCES = ("lifecycle", "plugin_events", "control")


def _sources(p: SchemaProfile) -> RecordingSources:
    sources = [*_GLOBAL_SOURCES, "observations"]
    if p.render_state:
        sources.append("render.state")
    if p.fluid_emissions:
        sources.append("fluid.emissions")
    if p.geometry:
        sources.append("scene.geometry")
    return RecordingSources(
        sole_ordered_capture_owner=True,
        sources=tuple(sources),
        mandatory=_GLOBAL_SOURCES if p.strict_prepare_contract else (),
    )


def manifest_for(version: str) -> ComponentManifest:
    """Build the manifest of one catalog version."""
    p = profile(version)
    grants = [GRANT_OUTPUT, GRANT_OBSERVATION, GRANT_CAMERA]
    if p.render_state:
        grants.append(GRANT_RENDER_STATE)
    if p.geometry:
        grants.append(GRANT_SCENE_GEOMETRY)
    return ComponentManifest(
        component_id=COMPONENT_ID,
        version=version,
        role=ROLE,
        recording_sources=_sources(p),
        grants=tuple(grants),
        finalizer_required=True,
        config_schema=config_json_schema(version),
        summary=p.summary,
    )


def required_grants(config: RecordConfig, scene_numeric_channels: Collection[str]) -> frozenset[str]:
    """The grants Record requests for this config in a scene with these numeric channels."""
    return config.required_grants(scene_numeric_channels)


def _compile(config: Mapping[str, Any], run: RunDocument, path_prefix: str, version: str) -> RecordConfig:
    """Compile against ``version``'s schema; issues become ``RunConfigError``."""
    try:
        return compile_record_config(config, run=run, version=version, path_prefix=path_prefix)
    except ConfigError as exc:
        raise RunConfigError(exc.issues) from None  # the one issue type: no translation


CATALOG = ComponentCatalog(COMPONENT_ID, {version: manifest_for(version) for version in VERSIONS}, LATEST, _compile)
