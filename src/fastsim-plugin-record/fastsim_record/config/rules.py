"""Rules of the Record config that span fields, involve the Run, or differ by version.

Paths are relative to the component config (the compiler prefixes
``plugins.<alias>.config``).  Key availability is checked on the authored mapping
before structuring; the other rules on the structured ``RecordConfig``.

    | # | since  | path                           | rule                                       |
    |---|--------|--------------------------------|--------------------------------------------|
    | 1 | -      | streams.render_state           | key exists only from 0.3.2                 |
    | 2 | -      | streams.cameras.*.encoding     | keys exist only from 0.3.6                 |
    |   |        | streams.cameras.*.quality      |                                            |
    | 3 | -      | streams.geometry               | key exists only from 0.3.12                |
    | 4 | 0.3.8  | streams.lifecycle/events/control | must be true                             |
    | 5 | 0.3.8  | finalize.preserve_incomplete   | must be true                               |
    | 6 | 0.3.8  | finalize.postprocessors        | must be empty                              |
    | 7 | 0.3.0  | streams.observations.include   | only with mode explicit; explicit needs one|
    | 8 | 0.3.6  | streams.cameras.*.encoding     | 'raw' is not authorable                    |
    | 9 | 0.3.6  | streams.cameras.*.quality      | PNG rejects quality                        |
    |10 | 0.3.0  | integrity                      | fast/strong need runtime.output sha256     |
    |11 | 0.3.0  | queues.critical.overload       | fail_run only                              |
    |12 | 0.3.0  | queues.numeric|media.overload  | lossy only if every stream in lane optional|
    |13 | 0.3.0  | streams.cameras                | an alias is a stream-name segment          |
    |   |        |                                | (letters, digits, '_', '-')                |
    |14 | 0.3.0  | streams.observations.include   | each channel is selected once              |

Lane contents: numeric = selected observations (``all_numeric`` channels count as
required), plus render.state and geometry when enabled (both required); media =
camera RGB.  A lane with no stream accepts any overload policy (it is not created).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from fastsim_contract.run import RunDocument
from fastsim_contract.run_errors import RunIssue
from fastsim_contract.run_structure import describe
from fastsim_record.config.model import CAMERA_ENCODINGS, LEGACY_RAW_ENCODING, RecordConfig
from fastsim_record.config.versions import LATEST, SchemaProfile

__all__ = [
    "Finding", "check_available_keys", "check_rules", "lane_required_streams", "prepare_contract_issues",
    "prepare_refusal", "rule_findings",
]

_COMPONENT = "plugin://fastsim/record"
_ALIAS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


def _unavailable(key: str, since: str, profile: SchemaProfile) -> str:
    return (
        f"not available in {_COMPONENT} {profile.version} (added in {since}); "
        "remove it or update the Run's lock"
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def check_available_keys(raw: Mapping[str, Any], profile: SchemaProfile) -> Iterator[RunIssue]:
    """Rules 1-3: keys that the locked version's schema does not have yet."""
    streams = _mapping(raw.get("streams"))
    if not profile.render_state and "render_state" in streams:
        yield RunIssue("streams.render_state", _unavailable("render_state", "0.3.2", profile))
    if not profile.camera_codecs:
        for alias, camera in _mapping(streams.get("cameras")).items():
            for key in ("encoding", "quality"):
                if key in _mapping(camera):
                    yield RunIssue(
                        f"streams.cameras.{alias}.{key}", _unavailable(key, "0.3.6", profile)
                    )
    if not profile.geometry and "geometry" in streams:
        yield RunIssue("streams.geometry", _unavailable("geometry", "0.3.12", profile))


def lane_required_streams(config: RecordConfig) -> dict[str, list[str]]:
    """Paths of the required streams in the numeric and media lanes."""
    streams = config.streams
    numeric: list[str] = []
    observations = streams.observations
    if observations.mode == "all_numeric":
        numeric.append("streams.observations (all_numeric channels are required)")
    elif observations.mode == "explicit":
        numeric.extend(
            f"streams.observations.include.{alias}"
            for alias, channel in observations.include.items()
            if channel.required
        )
    if streams.render_state.enabled:
        numeric.append("streams.render_state")
    if streams.geometry.enabled:
        numeric.append("streams.geometry")
    media = [f"streams.cameras.{alias}" for alias, cam in streams.cameras.items() if cam.required]
    return {"numeric": numeric, "media": media}


#: A rule issue and the config paths it was judged from (its own path among them).
Finding = tuple[RunIssue, tuple[str, ...]]

#: What each lane's overload rule reads besides the overload itself.
_LANE_INPUTS = {
    "numeric": ("streams.observations", "streams.render_state", "streams.geometry"),
    "media": ("streams.cameras",),
}


def _finding(path: str, message: str, *inputs: str) -> Finding:
    return RunIssue(path, message), (path, *inputs)


def prepare_contract_issues(config: RecordConfig) -> list[tuple[int, RunIssue]]:
    """Rules 4-6 (the prepare contract from 0.3.8 on), each issue with its rule number.

    The compiler applies them to Runs locked to 0.3.8 or later; ``RecordPlugin.prepare``
    applies them to every config, whatever the Run's lock, as defence in depth.
    """
    out: list[tuple[int, RunIssue]] = []
    for name in ("lifecycle", "events", "control"):
        if not getattr(config.streams, name):
            out.append((4, RunIssue(
                f"streams.{name}",
                "must be true: the global capture source mask is compiled before plugin startup (got false)",
            )))
    if not config.finalize.preserve_incomplete:
        out.append((5, RunIssue(
            "finalize.preserve_incomplete",
            "must be true: Core's RunOutputPolicy decides incomplete preservation (got false)",
        )))
    if config.finalize.postprocessors:
        count = len(config.finalize.postprocessors)
        out.append((6, RunIssue(
            "finalize.postprocessors",
            "must be empty: Record produces only the primary FSR artifact"
            f" (got {count} entr{'y' if count == 1 else 'ies'})",
        )))
    return out


def prepare_refusal(config: RecordConfig, prefix: str) -> RunIssue | None:
    """The prepare step's refusal of rules 4-6, whatever the lock, as one issue (one line).

    It names the first field and its rule, then any other refused field; ``prefix`` is
    the component config's path (``plugins.<alias>.config``).
    """
    refused = prepare_contract_issues(config)
    if not refused:
        return None
    rule, issue = refused[0]
    also = ", ".join(f"{prefix}.{other.path}" for _, other in refused[1:])
    return RunIssue(
        f"{prefix}.{issue.path}",
        f"{issue.message}; refused at prepare by config rule {rule} of the {_COMPONENT} "
        f"{LATEST} prepare contract, whatever the Run's lock"
        + (f" (also refused: {also})" if also else ""),
    )


def check_rules(
    config: RecordConfig, *, run: RunDocument, profile: SchemaProfile
) -> Iterator[RunIssue]:
    """Rules 4-14 on the structured config."""
    for issue, _ in rule_findings(config, run=run, profile=profile):
        yield issue


def rule_findings(config: RecordConfig, *, run: RunDocument, profile: SchemaProfile) -> Iterator[Finding]:
    """Rules 4-14, each issue with the paths it was judged from."""
    streams = config.streams
    if profile.strict_prepare_contract:
        yield from (_finding(issue.path, issue.message) for _, issue in prepare_contract_issues(config))
    observations = streams.observations
    if observations.mode != "explicit" and observations.include:
        yield _finding(
            "streams.observations.include",
            f"must be empty unless mode is 'explicit' (mode is '{observations.mode}')",
            "streams.observations.mode",
        )
    if observations.mode == "explicit" and not observations.include:
        yield _finding(
            "streams.observations.include",
            "must select at least one channel when mode is 'explicit' (use mode 'none' to record no observations)",
            "streams.observations.mode",
        )
    seen: dict[str, str] = {}
    for alias, channel in observations.include.items():
        if channel.channel in seen:
            yield _finding(
                f"streams.observations.include.{alias}.channel",
                f"'{channel.channel}' is already selected by include.{seen[channel.channel]}",
                f"streams.observations.include.{seen[channel.channel]}",
            )
        seen.setdefault(channel.channel, alias)
    for alias in streams.cameras:
        if not _ALIAS.fullmatch(alias):
            yield _finding(
                "streams.cameras",
                f"alias {describe(alias)} must be letters, digits, '_' and '-'"
                " (it names the FSR streams cameras.<alias>.*)",
            )
    if profile.camera_codecs:
        for alias, camera in streams.cameras.items():
            if camera.encoding == LEGACY_RAW_ENCODING:
                choices = ", ".join(f"'{c}'" for c in CAMERA_ENCODINGS)
                yield _finding(
                    f"streams.cameras.{alias}.encoding",
                    f"must be one of {choices} (got {describe(camera.encoding)})",
                )
            if camera.encoding == "png" and camera.quality is not None:
                yield _finding(
                    f"streams.cameras.{alias}.quality",
                    "is not accepted with encoding 'png', which is always lossless",
                    f"streams.cameras.{alias}.encoding",
                )
    if config.integrity in ("fast", "strong") and run.runtime.output.integrity != "sha256":
        yield _finding(
            "integrity",
            f"'{config.integrity}' requires the Run's output policy integrity 'sha256'"
            f" (runtime.output.integrity is '{run.runtime.output.integrity}')",
        )
    if config.queues.critical.overload != "fail_run":
        yield _finding(
            "queues.critical.overload",
            f"must be 'fail_run': the critical lane is lossless (got '{config.queues.critical.overload}')",
        )
    for lane, required in lane_required_streams(config).items():
        overload = getattr(config.queues, lane).overload
        if overload != "fail_run" and required:
            yield _finding(
                f"queues.{lane}.overload",
                f"must be 'fail_run' because the {lane} lane carries required stream"
                f" {required[0]}; '{overload}' is valid only when every stream in the lane is optional",
                *_LANE_INPUTS[lane],
            )
