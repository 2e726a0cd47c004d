"""Calibration epochs, tracked independently per camera and per Runtime generation.

Every camera has four streams (RGB, intrinsics, world translation, world
quaternion).  Within one calibration epoch all four records carry the same
calibration digest; the intrinsics sample declares it.  The worker calls
``observe`` for each released camera record (in global order), ``barrier`` at each
reset barrier and ``at_cut`` at the terminal cut.  Rules:

| #  | rule                                                                              |
|----|-----------------------------------------------------------------------------------|
| C1 | an intrinsics sample declares its digest as the camera's current epoch digest and |
|    | discharges any forward reference to that digest                                   |
| C2 | an RGB or extrinsics record carrying the current digest is valid                  |
| C3 | an RGB or extrinsics record carrying any other digest is a forward reference,     |
|    | allowed only within the same committed tick: it opens an obligation               |
| C4 | an obligation not discharged by a matching intrinsics sample before the next tick,|
|    | the next reset barrier or the terminal cut fails closed                           |
| C5 | a required camera's tick that has any sample must have all four (a missing       |
|    | required sample fails closed; checked when the tick ends)                         |
| C6 | an invalid calibration contract fails closed: unknown camera, empty digest, two   |
|    | intrinsics digests in one tick, a tick or generation that moves backwards         |
| C7 | a reset barrier ends the generation: every camera starts the next one undeclared  |
| C8 | an optional camera whose intrinsics sample of a tick was lost (a declared gap,     |
|    | ``lost``) does not fail C4: when the tick ends, its undischarged forward          |
|    | references become ``LostDeclaration`` values instead.  The records that made them  |
|    | are kept as they are (their digest is the camera's own) and marked by this value,  |
|    | which names the last declared epoch of that camera and generation (None if none). |
|    | A required camera never loses a sample without failing (lane rules L2, A9; F4).    |

Every violation is latched; ``violations`` lists them in order of detection, and
``lost_declarations`` lists the C8 marks.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from fastsim_record.core.errors import RuleId

__all__ = ["CalibrationRule", "CalibrationTracker", "CalibrationViolation", "CameraRole", "LostDeclaration"]


class CameraRole(enum.Enum):
    """The four streams of a camera."""

    RGB = "rgb"
    INTRINSICS = "intrinsics"
    TRANSLATION = "translation"
    QUATERNION = "quaternion_xyzw"


_ALL_ROLES = frozenset(CameraRole)


class CalibrationRule(RuleId):
    """The numbered calibration rules."""

    DECLARE = "C1"
    SHARE = "C2"
    FORWARD = "C3"
    DEADLINE = "C4"
    COMPLETE = "C5"
    CONTRACT = "C6"
    GENERATION = "C7"


@attrs.frozen
class CalibrationViolation:
    """One calibration rule that failed closed."""

    rule: CalibrationRule
    camera: str
    generation: int
    tick: int | None
    reason: str


@attrs.frozen
class LostDeclaration:
    """Rule C8: a calibration digest whose declaring intrinsics samples were lost.

    Records of ``camera`` referenced ``digest`` in ``ticks`` ticks of ``generation``
    (the first is ``first_tick``) whose intrinsics sample was lost; they are kept, and
    unless an intrinsics record of the same generation declares ``digest`` their
    calibration is ``epoch``, the last digest that camera declared in that generation
    before ``first_tick`` (None: none yet).
    """

    camera: str
    generation: int
    digest: str
    epoch: str | None
    first_tick: int
    ticks: int = 1


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class _CameraState:
    digest: str | None = None
    pending: dict[str, CameraRole] = attrs.field(factory=dict)
    roles: set[CameraRole] = attrs.field(factory=set)
    declared_this_tick: str | None = None
    intrinsics_lost: bool = False  # C8: this tick's intrinsics sample was lost


def _cameras(value: Mapping[str, bool]) -> dict[str, bool]:
    return dict(value)


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class CalibrationTracker:
    """Calibration obligations for a fixed set of cameras (camera -> required)."""

    cameras: dict[str, bool] = attrs.field(converter=_cameras)
    generation: int = 0
    _tick: int | None = attrs.field(init=False, default=None)
    _state: dict[str, _CameraState] = attrs.field(init=False, factory=dict)
    _violations: list[CalibrationViolation] = attrs.field(init=False, factory=list)
    _lost: dict[tuple[str, int, str], LostDeclaration] = attrs.field(init=False, factory=dict)

    def observe(
        self, camera: str, role: CameraRole, digest: str, *, tick: int, generation: int
    ) -> CalibrationViolation | None:
        """One released camera record; the first violation it caused, if any."""
        before = len(self._violations)
        self._advance(camera, tick, generation)
        if camera not in self.cameras:
            self._fail(CalibrationRule.CONTRACT, camera, f"camera {camera!r} is not selected")
        elif not digest:
            self._fail(CalibrationRule.CONTRACT, camera, f"camera {camera!r} {role.value} record has no calibration digest")
        else:
            state = self._state.get(camera)
            if state is None:
                state = self._state[camera] = _CameraState()
            state.roles.add(role)
            if role is CameraRole.INTRINSICS:
                self._declare(camera, state, digest)
            elif digest != state.digest:  # C3
                state.pending.setdefault(digest, role)
        return self._violations[before] if len(self._violations) > before else None

    def lost(self, camera: str, role: CameraRole, *, tick: int, generation: int) -> None:
        """A camera sample lost to its lane's declared policy (a gap); rule C8 for intrinsics."""
        self._advance(camera, tick, generation)
        if role is CameraRole.INTRINSICS and camera in self.cameras and not self.cameras[camera]:
            state = self._state.get(camera)
            if state is None:
                state = self._state[camera] = _CameraState()
            state.intrinsics_lost = True

    def _declare(self, camera: str, state: _CameraState, digest: str) -> None:
        if state.declared_this_tick is not None and state.declared_this_tick != digest:
            self._fail(
                CalibrationRule.CONTRACT,
                camera,
                f"camera {camera!r} declared two calibration digests in tick {self._tick}: "
                f"{state.declared_this_tick} and {digest}",
            )
            return
        state.declared_this_tick = digest
        state.digest = digest  # C1
        state.pending.pop(digest, None)

    def _advance(self, camera: str, tick: int, generation: int) -> None:
        if generation != self.generation:
            if generation < self.generation:
                self._fail(
                    CalibrationRule.CONTRACT,
                    camera,
                    f"camera {camera!r} record of generation {generation} after generation {self.generation}",
                )
                return
            self.barrier(generation)
        if self._tick is None:
            self._tick = tick
        elif tick > self._tick:
            self._end_tick("the next tick")
            self._tick = tick
        elif tick < self._tick:
            self._fail(
                CalibrationRule.CONTRACT,
                camera,
                f"camera {camera!r} record of tick {tick} after tick {self._tick}",
            )

    def _end_tick(self, why: str) -> None:
        for camera, state in self._state.items():
            if state.intrinsics_lost:  # C8: the declaration was lost, not broken
                for digest in state.pending:
                    key = (camera, self.generation, digest)
                    known = self._lost.get(key)
                    self._lost[key] = (
                        LostDeclaration(camera, self.generation, digest, state.digest, self._tick or 0)
                        if known is None else attrs.evolve(known, ticks=known.ticks + 1)
                    )
                state.pending.clear()
                state.intrinsics_lost = False
            for digest, role in state.pending.items():  # C4
                self._fail(
                    CalibrationRule.DEADLINE,
                    camera,
                    f"camera {camera!r} {role.value} forward-referenced calibration digest "
                    f"{digest} in tick {self._tick}, but no intrinsics sample declared it "
                    f"before {why}",
                )
            state.pending.clear()
            if state.roles and self.cameras.get(camera) and state.roles != _ALL_ROLES:  # C5
                missing = ", ".join(sorted(r.value for r in _ALL_ROLES - state.roles))
                self._fail(
                    CalibrationRule.COMPLETE,
                    camera,
                    f"required camera {camera!r} is missing {missing} in tick {self._tick}",
                )
            state.roles.clear()
            state.declared_this_tick = None

    def _fail(self, rule: CalibrationRule, camera: str, reason: str) -> None:
        self._violations.append(CalibrationViolation(rule, camera, self.generation, self._tick, reason))

    def barrier(self, generation: int) -> None:
        """A reset barrier: end the tick and generation (C4, C5), start ``generation`` (C7)."""
        if generation < self.generation:
            self._fail(
                CalibrationRule.CONTRACT,
                "",
                f"reset barrier to generation {generation} after generation {self.generation}",
            )
            return
        self._end_tick("the reset barrier")
        self._state.clear()
        self._tick = None
        self.generation = generation

    def at_cut(self) -> tuple[CalibrationViolation, ...]:
        """The terminal cut: end the tick (C4, C5) and return every violation."""
        self._end_tick("the terminal cut")
        return tuple(self._violations)

    @property
    def lost_declarations(self) -> tuple[LostDeclaration, ...]:
        """Rule C8's marks: one per camera, generation and digest, in order of first loss."""
        return tuple(self._lost.values())

    @property
    def violations(self) -> tuple[CalibrationViolation, ...]:
        """Every violation latched so far."""
        return tuple(self._violations)

    def digest(self, camera: str) -> str | None:
        """The camera's current epoch digest in this generation."""
        state = self._state.get(camera)
        return None if state is None else state.digest
