"""The versioned catalog: every manifest 0.3.0-0.3.12, lock pinning, declarations, grants."""

from __future__ import annotations

import pytest

from fastsim_contract.run_compiler import ComponentCatalog, ComponentManifest, RecordingSources
from fastsim_record import COMPONENT_ID
from fastsim_record.config import RecordConfig
from fastsim_record.config.catalog import CATALOG
from fastsim_record.config.model import (
    GRANT_CAMERA,
    GRANT_OBSERVATION,
    GRANT_OUTPUT,
    GRANT_RENDER_STATE,
    GRANT_SCENE_GEOMETRY,
)

from .helpers import camera, compile_config, compile_mapping, issues, run_mapping

P = "plugins.record.config"
ALL = tuple(f"0.3.{n}" for n in range(13))


def test_catalog_holds_every_historical_version() -> None:
    """The catalog keeps 0.3.0 through 0.3.12, oldest first; latest is 0.3.12."""
    catalog: ComponentCatalog = CATALOG
    assert catalog.component_id == COMPONENT_ID
    assert catalog.versions == ALL
    assert catalog.latest == "0.3.12"


@pytest.mark.parametrize("version", ALL)
def test_every_manifest_declares_role_sources_and_finalizer(version: str) -> None:
    """Each manifest: component id, data_consumer, sole ordered capture owner, required finalizer, own schema."""
    manifest = CATALOG.manifest(version)
    assert isinstance(manifest, ComponentManifest)
    assert (manifest.component_id, manifest.version, manifest.role) == (COMPONENT_ID, version, "data_consumer")
    assert manifest.recording_sources is not None
    assert manifest.recording_sources.sole_ordered_capture_owner is True
    assert manifest.recording_sources.sources[:4] == ("lifecycle", "plugin_events", "control", "observations")
    assert manifest.finalizer_required is True
    assert manifest.config_schema["$id"] == f"plugin://fastsim/record/{version}/config.schema.json"
    assert {GRANT_OUTPUT, GRANT_OBSERVATION, GRANT_CAMERA} <= set(manifest.grants)


def test_schemas_differ_where_the_history_says() -> None:
    """Schema keys appear in the documented versions: render_state 0.3.2, codecs 0.3.6, geometry 0.3.12."""
    def stream_keys(version: str) -> set[str]:
        return set(CATALOG.manifest(version).config_schema["properties"]["streams"]["properties"])

    def camera_keys(version: str) -> set[str]:
        streams = CATALOG.manifest(version).config_schema["properties"]["streams"]["properties"]
        return set(streams["cameras"]["additionalProperties"]["properties"])

    assert "render_state" not in stream_keys("0.3.1")
    assert "render_state" in stream_keys("0.3.2")
    assert {"encoding", "quality"}.isdisjoint(camera_keys("0.3.5"))
    assert {"encoding", "quality"} <= camera_keys("0.3.6")
    assert "geometry" not in stream_keys("0.3.11")
    assert "geometry" in stream_keys("0.3.12")
    assert CATALOG.manifest("0.3.0").config_schema["properties"]["streams"]["properties"]["cameras"]


def test_0_3_8_schema_makes_global_sources_mandatory() -> None:
    """From 0.3.8 the global sources are mandatory in the manifest and const true in the schema."""
    assert CATALOG.manifest("0.3.7").recording_sources == RecordingSources(
        True, ("lifecycle", "plugin_events", "control", "observations", "render.state"), ()
    )
    sources = CATALOG.manifest("0.3.8").recording_sources
    assert sources is not None
    assert sources.mandatory == ("lifecycle", "plugin_events", "control")
    finalize = CATALOG.manifest("0.3.8").config_schema["properties"]["finalize"]["properties"]
    assert finalize["postprocessors"]["maxProperties"] == 0
    assert finalize["preserve_incomplete"]["const"] is True


def test_new_compilation_selects_0_3_12() -> None:
    """A Run without a lock compiles against 0.3.12."""
    component = compile_mapping(run_mapping()).component("record")
    assert component.version == "0.3.12"
    assert component.manifest is CATALOG.manifest("0.3.12")


@pytest.mark.parametrize("version", ["0.3.0", "0.3.8", "0.3.11"])
def test_lock_pins_an_earlier_manifest(version: str) -> None:
    """A lock pinning an earlier version compiles against that version's manifest."""
    compiled = compile_mapping(run_mapping(version=version))
    assert compiled.component("record").version == version
    assert compiled.component("record").manifest is CATALOG.manifest(version)
    assert compiled.lock.components == {COMPONENT_ID: version}


def test_lock_with_unknown_version() -> None:
    """A lock naming a version the catalog lacks is reported at the lock."""
    assert issues(version="0.2.9") == [
        f"lock.components.{COMPONENT_ID}: {COMPONENT_ID} has no version '0.2.9'; known versions are "
        + ", ".join(ALL)
    ]


def test_0_3_0_native_cameras_record_raw_rgb_without_codec_keys() -> None:
    """0.3.0 has native camera streams with raw RGB; encoding and quality do not exist yet."""
    cam = compile_config({"streams": {"cameras": {"overview": camera()}}}, version="0.3.0").streams.cameras["overview"]
    assert (cam.encoding, cam.quality) == ("raw", None)
    assert issues({"streams": {"cameras": {"overview": camera(encoding="png", quality=3)}}}, version="0.3.5") == [
        f"{P}.streams.cameras.overview.encoding: not available in {COMPONENT_ID} 0.3.5 (added in 0.3.6);"
        " remove it or update the Run's lock",
        f"{P}.streams.cameras.overview.quality: not available in {COMPONENT_ID} 0.3.5 (added in 0.3.6);"
        " remove it or update the Run's lock",
    ]


def test_jpeg_default_arrives_in_0_3_6() -> None:
    """From 0.3.6 an omitted encoding means JPEG quality 92."""
    cam = compile_config({"streams": {"cameras": {"overview": camera()}}}, version="0.3.6").streams.cameras["overview"]
    assert (cam.encoding, cam.quality) == ("jpeg", 92)


def test_render_state_arrives_in_0_3_2() -> None:
    """render_state is unknown to 0.3.0/0.3.1 and accepted from 0.3.2."""
    assert issues({"streams": {"render_state": {"enabled": True}}}, version="0.3.1") == [
        f"{P}.streams.render_state: not available in {COMPONENT_ID} 0.3.1 (added in 0.3.2);"
        " remove it or update the Run's lock"
    ]
    assert compile_config({"streams": {"render_state": {"enabled": True}}}, version="0.3.2").streams.render_state.enabled


def test_geometry_arrives_in_0_3_12() -> None:
    """geometry is unknown before 0.3.12."""
    assert issues({"streams": {"geometry": {"enabled": True}}}, version="0.3.11") == [
        f"{P}.streams.geometry: not available in {COMPONENT_ID} 0.3.11 (added in 0.3.12);"
        " remove it or update the Run's lock"
    ]


def test_before_0_3_8_the_schema_accepted_what_it_now_rejects() -> None:
    """0.3.7 accepts disabled global sources, preserve_incomplete false and postprocessors; 0.3.8 rejects them."""
    config = {
        "streams": {"control": False},
        "finalize": {"preserve_incomplete": False, "postprocessors": {"video": {}}},
    }
    old = compile_config(config, version="0.3.7")
    assert (old.streams.control, old.finalize.preserve_incomplete) == (False, False)
    assert old.finalize.postprocessors == {"video": {}}
    assert issues(config, version="0.3.8") == [
        f"{P}.streams.control: must be true: the global capture source mask is compiled before plugin startup (got false)",
        f"{P}.finalize.preserve_incomplete: must be true: Core's RunOutputPolicy decides incomplete preservation (got false)",
        f"{P}.finalize.postprocessors: must be empty: Record produces only the primary FSR artifact (got 1 entry)",
    ]


# -- grants: a function of the config and the scene's numeric channels ---------------------

SCENE = ("robot.joint_position", "robot.joint_velocity")


def test_all_numeric_requests_observation_only_when_the_scene_has_numeric_channels() -> None:
    """The default mode requests Observation only if the scene declares numeric channels."""
    config = RecordConfig()
    assert config.required_grants(SCENE) == {GRANT_OUTPUT, GRANT_OBSERVATION}
    assert config.required_grants(()) == {GRANT_OUTPUT}
    assert config.selected_numeric_channels(SCENE) == SCENE


def test_mode_none_never_requests_observation() -> None:
    """Observations off: no Observation grant whatever the scene declares."""
    config = compile_config({"streams": {"observations": {"mode": "none"}}})
    assert config.required_grants(SCENE) == {GRANT_OUTPUT}


def test_explicit_mode_selects_its_channels() -> None:
    """explicit requests Observation for its included channels."""
    config = compile_config({"streams": {"observations": {"mode": "explicit", "include": {
        "joints": {"channel": "robot.joint_position"}}}}})
    assert config.selected_numeric_channels(SCENE) == ("robot.joint_position",)
    assert GRANT_OBSERVATION in config.required_grants(())


def test_optional_captures_add_their_grants() -> None:
    """Cameras, render_state and geometry add their own grants; the compiled component delegates."""
    compiled = compile_mapping(run_mapping({"streams": {
        "observations": {"mode": "none"},
        "cameras": {"overview": camera()},
        "render_state": {"enabled": True},
        "geometry": {"enabled": True},
    }})).component("record")
    assert compiled.required_grants(SCENE) == {
        GRANT_OUTPUT, GRANT_CAMERA, GRANT_RENDER_STATE, GRANT_SCENE_GEOMETRY
    }


@pytest.mark.parametrize("version", ALL)
def test_effective_config_authors_back_under_its_lock(version: str) -> None:
    """Every version's printed effective config compiles again, under the same lock, to the same config."""
    streams: dict[str, object] = {
        "observations": {"mode": "explicit", "include": {"j": {"channel": "robot.joint_position"}}},
        "cameras": {"overview": camera()},
    }
    if tuple(int(n) for n in version.split(".")) >= (0, 3, 6):
        streams["cameras"] = {"overview": camera(), "wrist": camera(encoding="png")}
    component = compile_mapping(run_mapping({"streams": streams}, version=version)).component("record")
    effective = component.effective_config()
    again = compile_mapping(run_mapping(effective, version=version)).component("record")
    assert again.config == component.config
    assert again.effective_config() == effective
    has = set(effective["streams"])
    assert ("render_state" in has, "geometry" in has) == (
        version not in ("0.3.0", "0.3.1"), version == "0.3.12")
