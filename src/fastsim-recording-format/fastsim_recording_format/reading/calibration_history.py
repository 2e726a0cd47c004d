"""Rebuild a recording's generation-to-digest calibration history from its records alone.

Offline Replay must not trust a stream's initial attributes: calibration may change at
every Runtime generation.  This reader walks the records of every
``cameras.<alias>.*`` stream and rebuilds, per camera and generation, the ordered
calibration epochs, using only record metadata and payloads:

    | # | record                      | contributes                                              |
    |---|-----------------------------|----------------------------------------------------------|
    | 1 | intrinsics DATA             | declares (camera, generation, digest): the profile in its |
    |   |                             | metadata, K from its payload                             |
    | 2 | rgb / extrinsics DATA       | references (camera, generation, digest)                  |
    | 3 | GAP / BARRIER               | nothing                                                  |

Consistency rules (a violation is listed in ``CalibrationHistory.problems``):

    | # | rule                                                                            |
    |---|---------------------------------------------------------------------------------|
    | H1 | an intrinsics record's digest is the digest of the profile it carries          |
    | H2 | its K payload is 72 bytes and equals the profile's K                            |
    | H3 | every referenced digest is declared by an intrinsics record of the same camera  |
    |    | and generation                                                                  |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs

from fastsim_recording_format import names
from fastsim_recording_format.codecs.calibration import (
    CalibrationProfileError,
    calibration_digest,
    check_profile,
    intrinsic_matrix,
    k_matches,
)

__all__ = [
    "CalibrationEpoch",
    "CalibrationHistory",
    "RecordLike",
    "StreamLike",
    "rebuild_calibration_history",
]

_ROLE_SUFFIXES = {suffix: role for role, suffix in names.ROLE_SUFFIX.items()}
_DATA = "DATA"


class StreamLike(Protocol):
    """A stream table entry (only ``stream_id`` and ``name`` are used)."""

    @property
    def stream_id(self) -> int: ...
    @property
    def name(self) -> str: ...


class RecordLike(Protocol):
    """A record as read back (``kind.name`` is DATA, GAP or BARRIER)."""

    @property
    def stream_id(self) -> int: ...
    @property
    def kind(self) -> Any: ...
    @property
    def generation(self) -> int: ...
    @property
    def global_sequence(self) -> int: ...
    @property
    def sim_time_ns(self) -> int: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...
    @property
    def payload(self) -> bytes: ...


@attrs.frozen
class CalibrationEpoch:
    """One calibration epoch of one camera in one generation."""

    camera: str
    generation: int
    digest: str
    profile: Mapping[str, Any] = attrs.field(eq=False)
    k: tuple[tuple[float, ...], ...]
    first_global_sequence: int
    first_sim_time_ns: int
    intrinsics_records: int


@attrs.frozen
class CalibrationHistory:
    """Every camera's calibration epochs by generation, rebuilt from records."""

    epochs: tuple[CalibrationEpoch, ...]
    problems: tuple[str, ...] = ()

    def cameras(self) -> tuple[str, ...]:
        """Camera aliases with at least one epoch, sorted."""
        return tuple(sorted({e.camera for e in self.epochs}))

    def digests(self, camera: str) -> dict[int, tuple[str, ...]]:
        """Generation -> that generation's digests in order of declaration."""
        out: dict[int, tuple[str, ...]] = {}
        for epoch in self.epochs:
            if epoch.camera == camera:
                out[epoch.generation] = (*out.get(epoch.generation, ()), epoch.digest)
        return out

    def epoch(self, camera: str, generation: int) -> CalibrationEpoch:
        """The (first) epoch of a camera in a generation; ``KeyError`` if there is none."""
        for epoch in self.epochs:
            if epoch.camera == camera and epoch.generation == generation:
                return epoch
        raise KeyError((camera, generation))


def _camera_role(name: str) -> tuple[str, str] | None:
    if not name.startswith(names.CAMERA_PREFIX):
        return None
    rest = name[len(names.CAMERA_PREFIX) :]
    for suffix, role in _ROLE_SUFFIXES.items():
        if rest.endswith("." + suffix):
            alias = rest[: -len(suffix) - 1]
            if alias:
                return alias, role
    return None


def rebuild_calibration_history(
    streams: Iterable[StreamLike], records: Iterable[RecordLike]
) -> CalibrationHistory:
    """Walk ``records`` (any order within a stream is file order) and rebuild the history."""
    roles = {s.stream_id: r for s in streams if (r := _camera_role(s.name)) is not None}
    epochs: dict[tuple[str, int, str], CalibrationEpoch] = {}
    references: dict[tuple[str, int, str], int] = {}
    problems: list[str] = []
    for record in records:
        camera_role = roles.get(record.stream_id)
        if camera_role is None or record.kind.name != _DATA:
            continue
        camera, role = camera_role
        digest = str(record.metadata.get("calibration_digest", ""))
        key = (camera, record.generation, digest)
        if role != "intrinsics":
            references.setdefault(key, record.global_sequence)
            continue
        epoch = _declare(camera, record, digest, problems)
        if epoch is None:
            continue
        known = epochs.get(key)
        epochs[key] = epoch if known is None else attrs.evolve(
            known, intrinsics_records=known.intrinsics_records + 1
        )
    for (camera, generation, digest), seq in sorted(references.items(), key=lambda kv: kv[1]):
        if (camera, generation, digest) not in epochs:
            problems.append(
                f"H3: cameras.{camera} record {seq} references calibration {digest or '(none)'} "
                f"that no intrinsics record declares in generation {generation}"
            )
    ordered = sorted(epochs.values(), key=lambda e: (e.camera, e.generation, e.first_global_sequence))
    return CalibrationHistory(tuple(ordered), tuple(problems))


def _declare(
    camera: str, record: RecordLike, digest: str, problems: list[str]
) -> CalibrationEpoch | None:
    where = f"cameras.{camera}.intrinsics record {record.global_sequence}"
    try:
        profile = check_profile(record.metadata.get("calibration_profile"))
        actual = calibration_digest(profile)
    except CalibrationProfileError as exc:
        problems.append(f"H1: {where}: {exc}")
        return None
    if actual != digest:
        problems.append(f"H1: {where}: digest {digest!r} is not its profile's ({actual!r})")
        return None
    k = intrinsic_matrix(profile)
    if not k_matches(record.payload, profile):
        problems.append(f"H2: {where}: K payload does not match the profile")
        return None
    return CalibrationEpoch(
        camera=camera,
        generation=record.generation,
        digest=digest,
        profile=dict(profile),
        k=k,
        first_global_sequence=record.global_sequence,
        first_sim_time_ns=record.sim_time_ns,
        intrinsics_records=1,
    )
