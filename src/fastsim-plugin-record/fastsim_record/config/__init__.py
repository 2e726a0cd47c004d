"""The Record component schema, compiler defaults and the versioned catalog.

How a host gets a ``RecordConfig`` (Core's way, through the entry points)::

    from fastsim_contract.run import load_run
    from fastsim_contract.run_compiler import compile_run

    compiled = compile_run(load_run("run.yaml"))          # RunConfigError on any issue
    record = compiled.components_using("plugin://fastsim/record")[0]
    config = record.config                                # a RecordConfig
    grants = record.required_grants(scene_numeric_channels)

or, inside the plugin, ``record_configs(compiled)`` / ``compile_record_config(...)``.
"""

from __future__ import annotations

from fastsim_contract.run_compiler import CompiledRun
from fastsim_record import COMPONENT_ID
from fastsim_record.config import model
from fastsim_record.config.compile import compile_record_config
from fastsim_record.config.model import *  # noqa: F403 - the model's public names are the package's
from fastsim_record.config.model import RecordConfig
from fastsim_record.config.versions import LATEST, VERSIONS

__all__ = ["LATEST", "VERSIONS", "compile_record_config", "record_configs"]
__all__ += model.__all__


def record_configs(compiled: CompiledRun) -> dict[str, RecordConfig]:
    """Every compiled Record plugin entry of a Run, by alias, in authored order."""
    out: dict[str, RecordConfig] = {}
    for component in compiled.components_using(COMPONENT_ID):
        if isinstance(component.config, RecordConfig):
            out[component.alias] = component.config
    return out
