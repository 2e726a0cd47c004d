"""Core's per-episode output name (``fastsim_contract.run_rename``): a compiled Run renamed, not compiled again."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import attrs
import pytest

from fastsim_contract.run import RunDocument, run_from_mapping
from fastsim_contract.run_compiler import ComponentCatalog, ComponentManifest, compile_run
from fastsim_contract.run_errors import RunConfigError
from fastsim_contract.run_rename import RenamesOutput, with_output_name
from fastsim_embedded.session import compile as compile_module
from fastsim_record import COMPONENT_ID
from fastsim_record.config.catalog import CATALOG
from fastsim_record.config.model import RecordConfig

PLAIN = "plugin://test/plain"


@attrs.frozen
class PlainConfig:
    """A component config without ``with_output_name``: Core compiles its renamed entry."""

    name: str

    def required_grants(self, scene_numeric_channels: Collection[str]) -> frozenset[str]:
        """No grants."""
        return frozenset()

    def to_mapping(self) -> dict[str, Any]:
        """The effective config."""
        return {"output": {"name": self.name}}


def _counted(catalog: ComponentCatalog, calls: list[str]) -> ComponentCatalog:
    def compiler(config: Mapping[str, Any], run: RunDocument, prefix: str, version: str) -> Any:
        calls.append(str((config.get("output") or {}).get("name")))
        return catalog.compiler(config, run, prefix, version)
    return attrs.evolve(catalog, compiler=compiler)


def _plain_catalog() -> ComponentCatalog:
    manifest = ComponentManifest(PLAIN, "1.0", "recorder", None, (), False, {})

    def compiler(config: Mapping[str, Any], run: RunDocument, prefix: str, version: str) -> Any:
        return PlainConfig(str(config["output"]["name"]))
    return ComponentCatalog(PLAIN, {"1.0": manifest}, "1.0", compiler)


def _document(name: str) -> RunDocument:
    return run_from_mapping({
        "schema": "fastsim/2", "name": "rename", "backend": "synthetic",
        "plugins": {
            "record": {"use": COMPONENT_ID, "config": {"output": {"name": name}, "integrity": "structural"}},
            "plain": {"use": PLAIN, "config": {"output": {"name": "plain.bin"}}},
        },
    })


def test_a_renamed_run_equals_the_renamed_document_compiled_and_record_is_not_compiled_again() -> None:
    """Record renames its own config (no compile); the document's entry and the config equal compiling the renamed document."""
    calls: list[str] = []
    catalogs = {COMPONENT_ID: _counted(CATALOG, calls), PLAIN: _plain_catalog()}
    template = compile_run(_document("first.fsr"), catalogs)
    assert isinstance(template.component("record").config, RenamesOutput)
    calls.clear()
    renamed = with_output_name(template, "record", "episode-000002.fsr", catalogs)
    assert calls == []
    assert renamed == compile_run(_document("episode-000002.fsr"), catalogs)
    assert template.component("record").config.to_mapping()["output"]["name"] == "first.fsr"  # the template is unchanged
    config = renamed.component("record").config
    assert isinstance(config, RecordConfig)
    assert config.output.name == "episode-000002.fsr"


def test_a_config_without_the_method_is_compiled_again_from_its_renamed_entry() -> None:
    """A component whose config cannot rename itself gets its catalog's compile of the renamed entry (same version)."""
    catalogs = {COMPONENT_ID: CATALOG, PLAIN: _plain_catalog()}
    template = compile_run(_document("a.fsr"), catalogs)
    renamed = with_output_name(template, "plain", "other.bin", catalogs)
    assert renamed.component("plain").config == PlainConfig("other.bin")
    assert renamed.run.plugin("plain").config == {"output": {"name": "other.bin"}}
    assert renamed.component("record") == template.component("record")


def test_a_refused_name_is_a_run_config_error_at_the_output_name() -> None:
    """A name Record refuses is one RunConfigError line at plugins.record.config.output.name; an unknown alias is a KeyError."""
    catalogs = {COMPONENT_ID: CATALOG, PLAIN: _plain_catalog()}
    template = compile_run(_document("a.fsr"), catalogs)
    with pytest.raises(RunConfigError) as caught:
        with_output_name(template, "record", "sub/dir.fsr", catalogs)
    assert [i.path for i in caught.value.issues] == ["plugins.record.config.output.name"]
    assert "bare file name" in caught.value.issues[0].message
    with pytest.raises(KeyError):
        with_output_name(template, "nobody", "x.fsr", catalogs)


def test_a_sweep_episode_is_compiled_once(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """prepare_run of a sweep episode compiles the Run once and renames Record's output (it compiled it twice)."""
    run = tmp_path / "run.yaml"
    run.write_text(
        "schema: fastsim/2\nname: sweep\nbackend: synthetic\nruntime: {sensor_hz: 30, duration_s: 0.2}\n"
        "plugins:\n  record:\n    use: plugin://fastsim/record\n    config: {output: {name: ep.fsr}}\n"
    )
    compiled: list[int] = []
    real = compile_run

    def counted(document: RunDocument, catalogs: Any = None) -> Any:
        compiled.append(1)
        return real(document, catalogs)

    monkeypatch.setattr(compile_module, "compile_run", counted)
    prepared = compile_module.prepare_run(run, seed=7, episode=3, sweep=True)
    try:
        assert len(compiled) == 1
        assert prepared.output_names == ("ep-00003.fsr",)
        assert prepared.run.plugin("record").config["output"] == {"name": "ep-00003.fsr"}
    finally:
        prepared.backend.close()
