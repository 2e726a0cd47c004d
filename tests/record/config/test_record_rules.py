"""Every Record config rule of the README, each with its exact message."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from fastsim_record.config import (
    BatchingConfig,
    CameraConfig,
    FinalizeConfig,
    QueueConfig,
    QueuesConfig,
    RecordConfig,
)

from .helpers import camera, compile_config, issues

P = "plugins.record.config"


def test_minimal_config_compiles_to_the_full_effective_config() -> None:
    """No config at all gives exactly the README's full executable defaults."""
    config = compile_config()
    assert config == RecordConfig()
    assert config.to_mapping() == {
        "integrity": "structural",
        "output": {"name": "episode.fsr"},
        "streams": {
            "lifecycle": True,
            "events": True,
            "control": True,
            "observations": {"mode": "all_numeric", "include": {}},
            "cameras": {},
            "render_state": {"enabled": False, "rate_hz": 30.0},
            "geometry": {"enabled": False, "rate_hz": 30.0},
        },
        "queues": {
            "critical": {"max_items": 4096, "max_bytes": 67108864, "overload": "fail_run"},
            "numeric": {"max_items": 2048, "max_bytes": 268435456, "overload": "fail_run"},
            "media": {"max_items": 64, "max_bytes": 536870912, "overload": "fail_run"},
        },
        "batching": {"max_items": 256, "max_bytes": 16777216, "max_sim_duration_s": 1.0},
        "finalize": {"requested_timeout_s": 60.0, "preserve_incomplete": True, "postprocessors": {}},
    }


def test_null_and_empty_config_are_the_defaults() -> None:
    """`config: null` and `config: {}` both mean the defaults."""
    assert compile_config({}) == compile_config() == compile_config(None)


def test_config_must_be_a_mapping() -> None:
    """A non-mapping config is one line at the config path."""
    assert issues([1, 2]) == [f"{P}: must be a mapping (got a list)"]


# -- observations -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["all_numeric", "none", "explicit"])
def test_observation_modes(mode: str) -> None:
    """mode is all_numeric, none or explicit."""
    include = {"joints": {"channel": "robot.joint_position"}} if mode == "explicit" else {}
    config = compile_config({"streams": {"observations": {"mode": mode, "include": include}}})
    assert config.streams.observations.mode == mode


def test_unknown_observation_mode() -> None:
    """Any other mode is rejected, listing the valid ones."""
    assert issues({"streams": {"observations": {"mode": "all"}}}) == [
        f"{P}.streams.observations.mode: must be one of 'all_numeric', 'none', 'explicit' (got 'all')"
    ]


def test_explicit_include_defaults() -> None:
    """An include entry needs only `channel`; required defaults true, every_n_samples 1."""
    config = compile_config({"streams": {"observations": {
        "mode": "explicit", "include": {"joints": {"channel": "robot.joint_position"}}}}})
    joints = config.streams.observations.include["joints"]
    assert (joints.channel, joints.required, joints.every_n_samples) == ("robot.joint_position", True, 1)


def test_include_channel_is_required() -> None:
    """An include entry without `channel` names the missing key."""
    assert issues({"streams": {"observations": {"mode": "explicit", "include": {"joints": {}}}}}) == [
        f"{P}.streams.observations.include.joints.channel: is required"
    ]


def test_observation_every_n_samples_above_one_fails() -> None:
    """every_n_samples above 1 fails validation rather than creating sequence holes."""
    assert issues({"streams": {"observations": {"mode": "explicit", "include": {
        "joints": {"channel": "robot.joint_position", "every_n_samples": 2}}}}}) == [
        f"{P}.streams.observations.include.joints.every_n_samples: must be 1: capture cadence is set"
        " by runtime.sensor_hz and runtime.rate_policy, and values above 1 would create sequence"
        " holes (got 2)"
    ]


def test_include_requires_explicit_mode() -> None:
    """include must stay empty unless the mode is explicit."""
    assert issues({"streams": {"observations": {"mode": "none", "include": {
        "joints": {"channel": "robot.joint_position"}}}}}) == [
        f"{P}.streams.observations.include: must be empty unless mode is 'explicit' (mode is 'none')"
    ]


def test_explicit_mode_needs_a_channel() -> None:
    """explicit with an empty include is rejected, pointing to mode none."""
    assert issues({"streams": {"observations": {"mode": "explicit"}}}) == [
        f"{P}.streams.observations.include: must select at least one channel when mode is"
        " 'explicit' (use mode 'none' to record no observations)"
    ]


# -- cameras ----------------------------------------------------------------------


def test_camera_defaults_to_jpeg_quality_92() -> None:
    """Omitting encoding and quality gives JPEG quality 92, required, every sample."""
    cam = compile_config({"streams": {"cameras": {"overview": camera()}}}).streams.cameras["overview"]
    assert (cam.encoding, cam.quality, cam.required, cam.every_n_samples) == ("jpeg", 92, True, 1)
    assert cam.quaternion_xyzw == "sensors.overview.camera.extrinsics.quaternion_xyzw"


def test_jpeg_quality_is_kept() -> None:
    """An explicit JPEG quality is kept as authored."""
    cam = compile_config({"streams": {"cameras": {"overview": camera(quality=75)}}}).streams.cameras["overview"]
    assert (cam.encoding, cam.quality) == ("jpeg", 75)


def test_png_has_no_quality() -> None:
    """PNG is lossless and carries no quality."""
    cam = compile_config({"streams": {"cameras": {"overview": camera(encoding="png")}}}).streams.cameras["overview"]
    assert (cam.encoding, cam.quality) == ("png", None)


@pytest.mark.parametrize("quality", [0, 101, -5])
def test_quality_out_of_range(quality: int) -> None:
    """JPEG quality outside 1..100 is rejected with the validator's own text."""
    assert issues({"streams": {"cameras": {"overview": camera(quality=quality)}}}) == [
        f"{P}.streams.cameras.overview.quality: must be an integer from 1 through 100 (got {quality})"
    ]


@pytest.mark.parametrize(("quality", "shown"), [(92.0, "92.0"), ("92", "'92'"), (True, "true")])
def test_quality_must_be_an_exact_integer(quality: object, shown: str) -> None:
    """quality is an exact integer: no floats, strings or booleans."""
    assert issues({"streams": {"cameras": {"overview": camera(quality=quality)}}}) == [
        f"{P}.streams.cameras.overview.quality: must be an integer (got {shown})"
    ]


def test_png_rejects_quality() -> None:
    """PNG rejects quality because it is always lossless."""
    assert issues({"streams": {"cameras": {"overview": camera(encoding="png", quality=90)}}}) == [
        f"{P}.streams.cameras.overview.quality: is not accepted with encoding 'png', which is always lossless"
    ]


@pytest.mark.parametrize("encoding", ["webp", "raw"])
def test_unknown_encoding(encoding: str) -> None:
    """encoding is jpeg or png."""
    assert issues({"streams": {"cameras": {"overview": camera(encoding=encoding)}}}) == [
        f"{P}.streams.cameras.overview.encoding: must be one of 'jpeg', 'png' (got '{encoding}')"
    ]


def test_camera_channels_are_required() -> None:
    """Every camera alias names rgb, intrinsics, translation and quaternion_xyzw."""
    assert issues({"streams": {"cameras": {"overview": {"rgb": "a"}}}}) == [
        f"{P}.streams.cameras.overview.intrinsics: is required",
        f"{P}.streams.cameras.overview.translation: is required",
        f"{P}.streams.cameras.overview.quaternion_xyzw: is required",
    ]


def test_camera_every_n_samples_above_one_fails() -> None:
    """A camera's every_n_samples is fixed to 1."""
    assert issues({"streams": {"cameras": {"overview": camera(every_n_samples=3)}}}) == [
        f"{P}.streams.cameras.overview.every_n_samples: must be 1: capture cadence is set by"
        " runtime.sensor_hz and runtime.rate_policy, and values above 1 would create sequence holes (got 3)"
    ]


# -- global sources, optional streams ----------------------------------------------


@pytest.mark.parametrize("source", ["lifecycle", "events", "control"])
def test_global_sources_must_remain_true(source: str) -> None:
    """lifecycle, events and control must remain true."""
    assert issues({"streams": {source: False}}) == [
        f"{P}.streams.{source}: must be true: the global capture source mask is compiled before"
        " plugin startup (got false)"
    ]


@pytest.mark.parametrize("stream", ["render_state", "geometry"])
def test_optional_streams_are_disabled_by_default_and_enable(stream: str) -> None:
    """render_state and geometry are off by default and take {enabled, rate_hz}."""
    assert getattr(compile_config().streams, stream).enabled is False
    enabled = getattr(compile_config({"streams": {stream: {"enabled": True, "rate_hz": 10}}}).streams, stream)
    assert (enabled.enabled, enabled.rate_hz) == (True, 10.0)


def test_rate_hz_must_be_positive() -> None:
    """A capture rate must be a positive number."""
    assert issues({"streams": {"render_state": {"enabled": True, "rate_hz": 0}}}) == [
        f"{P}.streams.render_state.rate_hz: must be a positive number (got 0.0)"
    ]


# -- integrity and output ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fast", "strong"])
def test_tamper_evident_integrity_requires_sha256_policy(mode: str) -> None:
    """fast and strong require the Run's output policy integrity sha256."""
    assert issues({"integrity": mode}) == [
        f"{P}.integrity: '{mode}' requires the Run's output policy integrity 'sha256'"
        " (runtime.output.integrity is 'none')"
    ]
    ok = compile_config({"integrity": mode}, runtime={"output": {"integrity": "sha256"}})
    assert ok.integrity == mode


def test_unknown_integrity() -> None:
    """integrity is structural, fast or strong."""
    assert issues({"integrity": "sha256"}) == [
        f"{P}.integrity: must be one of 'structural', 'fast', 'strong' (got 'sha256')"
    ]


@pytest.mark.parametrize("name", ["out/episode.fsr", "/tmp/x.fsr", "..", "a\\b.fsr", "", " x.fsr"])
def test_output_name_must_be_bare(name: str) -> None:
    """output.name must be a bare file name."""
    assert issues({"output": {"name": name}}) == [
        f"{P}.output.name: must be a bare file name without directories (got {name!r})"
    ]


# -- queues ------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["degrade_recording", "drop_oldest", "drop_newest"])
def test_critical_lane_allows_only_fail_run(policy: str) -> None:
    """The critical lane allows only fail_run."""
    assert issues({"queues": {"critical": {"overload": policy}}}) == [
        f"{P}.queues.critical.overload: must be 'fail_run': the critical lane is lossless (got '{policy}')"
    ]


def test_lossy_numeric_lane_with_required_channel_fails() -> None:
    """A lane containing a required stream allows only fail_run."""
    config: dict[str, Any] = {
        "streams": {"observations": {"mode": "explicit", "include": {
            "joints": {"channel": "robot.joint_position", "required": True}}}},
        "queues": {"numeric": {"overload": "drop_oldest"}},
    }
    assert issues(config) == [
        f"{P}.queues.numeric.overload: must be 'fail_run' because the numeric lane carries required"
        " stream streams.observations.include.joints; 'drop_oldest' is valid only when every stream"
        " in the lane is optional"
    ]


def test_all_numeric_channels_count_as_required() -> None:
    """all_numeric observations are required, so the numeric lane stays lossless."""
    assert issues({"queues": {"numeric": {"overload": "drop_newest"}}}) == [
        f"{P}.queues.numeric.overload: must be 'fail_run' because the numeric lane carries required"
        " stream streams.observations (all_numeric channels are required); 'drop_newest' is valid"
        " only when every stream in the lane is optional"
    ]


def test_lossy_media_lane_with_required_camera_fails() -> None:
    """A required camera keeps the media lane on fail_run."""
    config = {
        "streams": {"cameras": {"overview": camera()}},
        "queues": {"media": {"overload": "degrade_recording"}},
    }
    assert issues(config) == [
        f"{P}.queues.media.overload: must be 'fail_run' because the media lane carries required"
        " stream streams.cameras.overview; 'degrade_recording' is valid only when every stream in"
        " the lane is optional"
    ]


def test_lossy_policies_allowed_when_every_stream_is_optional() -> None:
    """degrade_recording/drop_oldest/drop_newest are valid when the lane is all optional."""
    config = compile_config({
        "streams": {
            "observations": {"mode": "explicit", "include": {
                "joints": {"channel": "robot.joint_position", "required": False}}},
            "cameras": {"overview": camera(required=False)},
        },
        "queues": {"numeric": {"overload": "drop_oldest"}, "media": {"overload": "drop_newest"}},
    })
    assert config.queues.numeric == QueueConfig(2048, 268435456, "drop_oldest")
    assert config.queues.media == QueueConfig(64, 536870912, "drop_newest")


def test_enabled_render_state_is_a_required_numeric_stream() -> None:
    """An enabled render_state keeps the numeric lane lossless even with observations off."""
    config = {
        "streams": {"observations": {"mode": "none"}, "render_state": {"enabled": True}},
        "queues": {"numeric": {"overload": "drop_oldest"}},
    }
    assert issues(config) == [
        f"{P}.queues.numeric.overload: must be 'fail_run' because the numeric lane carries required"
        " stream streams.render_state; 'drop_oldest' is valid only when every stream in the lane is optional"
    ]


def test_partial_lane_keeps_that_lanes_defaults() -> None:
    """Authoring one key of a lane keeps the lane's own default sizes."""
    config = compile_config({"queues": {"media": {"max_items": 8}}})
    assert config.queues == attrs.evolve(QueuesConfig(), media=QueueConfig(8, 536870912))


def test_unknown_overload_policy() -> None:
    """overload is one of the four policies."""
    assert issues({"queues": {"media": {"overload": "block"}}}) == [
        f"{P}.queues.media.overload: must be one of 'fail_run', 'degrade_recording', 'drop_oldest',"
        " 'drop_newest' (got 'block')"
    ]


@pytest.mark.parametrize("key", ["max_items", "max_bytes"])
def test_queue_limits_positive(key: str) -> None:
    """Queue limits are positive integers."""
    assert issues({"queues": {"critical": {key: 0}}}) == [
        f"{P}.queues.critical.{key}: must be a positive integer (got 0)"
    ]


# -- batching and finalize ----------------------------------------------------------


def test_batching_values_must_be_positive() -> None:
    """Batching limits are positive numbers, every one reported."""
    assert issues({"batching": {"max_items": 0, "max_bytes": -1, "max_sim_duration_s": 0}}) == [
        f"{P}.batching.max_items: must be a positive integer (got 0)",
        f"{P}.batching.max_bytes: must be a positive integer (got -1)",
        f"{P}.batching.max_sim_duration_s: must be a positive number (got 0.0)",
    ]
    assert compile_config({"batching": {"max_items": 1}}).batching == BatchingConfig(max_items=1)


def test_finalize_timeout_must_be_positive() -> None:
    """finalize.requested_timeout_s must be positive."""
    assert issues({"finalize": {"requested_timeout_s": 0}}) == [
        f"{P}.finalize.requested_timeout_s: must be a positive number (got 0.0)"
    ]
    assert compile_config({"finalize": {"requested_timeout_s": 5}}).finalize == FinalizeConfig(5.0)


def test_preserve_incomplete_must_be_true() -> None:
    """preserve_incomplete false is rejected by the schema."""
    assert issues({"finalize": {"preserve_incomplete": False}}) == [
        f"{P}.finalize.preserve_incomplete: must be true: Core's RunOutputPolicy decides incomplete"
        " preservation (got false)"
    ]


def test_postprocessors_must_be_empty() -> None:
    """Postprocessors are rejected by the schema."""
    assert issues({"finalize": {"postprocessors": {"video": {"fps": 15}, "upload": {}}}}) == [
        f"{P}.finalize.postprocessors: must be empty: Record produces only the primary FSR artifact (got 2 entries)"
    ]


# -- unknown keys, types, several errors ----------------------------------------------


@pytest.mark.parametrize(
    ("config", "line"),
    [
        ({"integrty": "structural"}, f"{P}.integrty: unknown key; did you mean 'integrity'?"),
        ({"streams": {"camera": {}}}, f"{P}.streams.camera: unknown key; did you mean 'cameras'?"),
        ({"streams": {"cameras": {"overview": camera(qualty=90)}}},
         f"{P}.streams.cameras.overview.qualty: unknown key; did you mean 'quality'?"),
        ({"finalize": {"timeout": 3}}, f"{P}.finalize.timeout: unknown key; did you mean 'requested_timeout_s'?"),
        ({"zzz": 1}, f"{P}.zzz: unknown key; valid keys are 'batching', 'finalize', 'integrity',"
                     " 'output', 'queues', 'streams'"),
        ({"cameras": {"overview": camera(quality=0)}}, f"{P}.cameras: unknown key; did you mean 'streams.cameras'?"),
        ({"name": "a.fsr"}, f"{P}.name: unknown key; did you mean 'output.name'?"),
        ({"postprocessors": {}}, f"{P}.postprocessors: unknown key; did you mean 'finalize.postprocessors'?"),
        ({"media": {}}, f"{P}.media: unknown key; did you mean 'queues.media'?"),
    ],
)
def test_unknown_keys_suggest_the_nearest(config: dict[str, Any], line: str) -> None:
    """Unknown keys are rejected with the nearest valid key (or the section it belongs in) suggested."""
    assert issues(config) == [line]


def test_wrong_types_are_named() -> None:
    """Wrong types are named per field, never coerced."""
    assert issues({"streams": {"lifecycle": "yes", "cameras": []}, "output": "x.fsr"}) == [
        f"{P}.output: must be a mapping (got 'x.fsr')",
        f"{P}.streams.lifecycle: must be true or false (got 'yes')",
        f"{P}.streams.cameras: must be a mapping (got a list)",
    ]


def test_several_errors_are_all_reported() -> None:
    """Errors across the document are reported together, one line each."""
    lines = issues({
        "integrity": "fast",
        "output": {"name": "a/b.fsr"},
        "streams": {"cameras": {"overview": camera(quality=0, encodng="png")}},
        "queus": {},
    })
    assert lines == [
        f"{P}.output.name: must be a bare file name without directories (got 'a/b.fsr')",
        f"{P}.streams.cameras.overview.quality: must be an integer from 1 through 100 (got 0)",
        f"{P}.streams.cameras.overview.encodng: unknown key; did you mean 'encoding'?",
        f"{P}.queus: unknown key; did you mean 'queues'?",
        f"{P}.integrity: 'fast' requires the Run's output policy integrity 'sha256'"
        " (runtime.output.integrity is 'none')",
    ]


def test_rules_beside_a_bad_key_are_not_guessed() -> None:
    """A rule next to an invalid key is not reported from the key's default."""
    assert issues({"streams": {"observations": {"mode": "explicti", "include": {
        "joints": {"channel": "robot.joint_position"}}}}}) == [
        f"{P}.streams.observations.mode: must be one of 'all_numeric', 'none', 'explicit' (got 'explicti')"
    ]


def test_type_and_rule_errors_are_reported_together() -> None:
    """A field error does not hide rule errors elsewhere in the document."""
    assert issues({"streams": {"lifecycle": False}, "batching": {"max_items": 0}}) == [
        f"{P}.batching.max_items: must be a positive integer (got 0)",
        f"{P}.streams.lifecycle: must be true: the global capture source mask is compiled before"
        " plugin startup (got false)",
    ]


def test_rule_errors_are_reported_together() -> None:
    """Cross-field rules report every violation at once."""
    lines = issues({
        "integrity": "strong",
        "streams": {"events": False, "control": False},
        "queues": {"critical": {"overload": "drop_oldest"}},
        "finalize": {"preserve_incomplete": False},
    })
    assert [line.split(":")[0] for line in lines] == [
        f"{P}.streams.events",
        f"{P}.streams.control",
        f"{P}.finalize.preserve_incomplete",
        f"{P}.integrity",
        f"{P}.queues.critical.overload",
    ]


def test_validator_text_is_the_attrs_validators_own() -> None:
    """The compiled message carries exactly the text the attrs validator raises."""
    with pytest.raises(ValueError, match=r"^must be an integer from 1 through 100 \(got 0\)$"):
        CameraConfig("a", "b", "c", "d", quality=0)
    assert issues({"streams": {"cameras": {"overview": camera(quality=0)}}}) == [
        f"{P}.streams.cameras.overview.quality: must be an integer from 1 through 100 (got 0)"
    ]


def test_effective_config_is_a_fixed_point() -> None:
    """Compiling the printed effective config again gives the same effective config."""
    authored = {
        "streams": {
            "observations": {"mode": "explicit", "include": {"j": {"channel": "robot.joint_position"}}},
            "cameras": {"overview": camera()},
            "geometry": {"enabled": True},
        },
        "queues": {"media": {"max_items": 8}},
    }
    effective = compile_config(authored)
    assert compile_config(effective.to_mapping()) == effective


def test_structuring_uses_a_private_strict_converter() -> None:
    """Authored data is structured by a module-private converter with forbid_extra_keys=True; cattrs' global one is untouched."""
    import cattrs

    import fastsim_record.config as config_package
    from fastsim_record.config import compile as compile_module

    converter = compile_module._CONVERTER
    assert converter.forbid_extra_keys is True
    assert converter is not cattrs.global_converter
    assert "_CONVERTER" not in compile_module.__all__
    assert not any(isinstance(getattr(config_package, name), cattrs.Converter) for name in config_package.__all__)
    assert cattrs.structure("3", int) == 3  # the global converter still coerces; ours never does
    assert issues({"batching": {"max_items": "3"}}) == [f"{P}.batching.max_items: must be an integer (got '3')"]


@pytest.mark.parametrize("alias", ["", "a.b", "x y", "a/b", "-lead"])
def test_camera_alias_must_be_a_stream_name_segment(alias: str) -> None:
    """A camera alias names the streams cameras.<alias>.*: letters, digits, '_' and '-' only."""
    assert issues({"streams": {"cameras": {alias: camera()}}}) == [
        f"{P}.streams.cameras: alias {alias!r} must be letters, digits, '_' and '-'"
        " (it names the FSR streams cameras.<alias>.*)"
    ]
    assert compile_config({"streams": {"cameras": {"exterior-left_2": camera()}}}).streams.cameras


def test_an_observation_channel_is_selected_once() -> None:
    """Two include entries selecting the same channel are rejected at the second."""
    assert issues({"streams": {"observations": {"mode": "explicit", "include": {
        "a": {"channel": "robot.joint_position"},
        "b": {"channel": "robot.joint_position", "required": False},
    }}}}) == [
        f"{P}.streams.observations.include.b.channel: 'robot.joint_position' is already selected by include.a"
    ]


def test_a_lane_rule_is_not_judged_from_a_repaired_required_flag() -> None:
    """A bad `required` is reported alone: the lane rule is not guessed from its default (true)."""
    assert issues({"streams": {"cameras": {"x": camera(required="no")}}, "queues": {"media": {"overload": "drop_oldest"}}}) == [
        f"{P}.streams.cameras.x.required: must be true or false (got 'no')"
    ]
    assert issues({"streams": {"observations": {"mode": "none"}, "render_state": {"enabled": "yes"}},
                   "queues": {"numeric": {"overload": "drop_oldest"}}}) == [
        f"{P}.streams.render_state.enabled: must be true or false (got 'yes')"
    ]


def test_a_lane_rule_is_still_reported_beside_an_unrelated_bad_limit() -> None:
    """A bad max_items does not hide the lane's overload rule, which does not read it."""
    assert issues({"queues": {"numeric": {"overload": "drop_oldest", "max_items": 0}}}) == [
        f"{P}.queues.numeric.max_items: must be a positive integer (got 0)",
        f"{P}.queues.numeric.overload: must be 'fail_run' because the numeric lane carries required"
        " stream streams.observations (all_numeric channels are required); 'drop_oldest' is valid"
        " only when every stream in the lane is optional",
    ]
