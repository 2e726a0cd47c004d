"""Calibration epochs: one example per rule C1-C7, and descriptor drift D1-D2."""

from __future__ import annotations

from fastsim_record.core import (
    CalibrationRule,
    CalibrationTracker,
    CameraRole,
    DescriptorTracker,
)

RGB, K, T, Q = CameraRole.RGB, CameraRole.INTRINSICS, CameraRole.TRANSLATION, CameraRole.QUATERNION


def _tick(tr: CalibrationTracker, tick: int, digest: str, *, roles: tuple[CameraRole, ...] = (K, RGB, T, Q),
          camera: str = "a", generation: int = 0) -> None:
    for role in roles:
        tr.observe(camera, role, digest, tick=tick, generation=generation)


def _rules(tr: CalibrationTracker) -> list[CalibrationRule]:
    return [v.rule for v in tr.at_cut()]


def test_c1_intrinsics_declares_the_epoch_digest() -> None:
    """C1: an intrinsics sample makes its digest the camera's current epoch digest."""
    tr = CalibrationTracker({"a": True})
    _tick(tr, 1, "d1")
    assert tr.digest("a") == "d1"
    assert _rules(tr) == []


def test_c2_records_sharing_the_current_digest_are_valid() -> None:
    """C2: later ticks whose RGB and extrinsics carry the current digest need no new intrinsics."""
    tr = CalibrationTracker({"a": False})
    _tick(tr, 1, "d1")
    _tick(tr, 2, "d1", roles=(RGB, T, Q))
    _tick(tr, 3, "d1", roles=(RGB, T, Q))
    assert _rules(tr) == []


def test_c3_c4_a_superseded_digest_is_not_the_current_epoch() -> None:
    """C3/C4: RGB carrying the previous epoch's digest after a new declaration fails at tick end."""
    tr = CalibrationTracker({"a": False})
    _tick(tr, 1, "d1")
    _tick(tr, 2, "d2", roles=(K, T, Q))
    tr.observe("a", RGB, "d1", tick=2, generation=0)
    violations = tr.at_cut()
    assert [v.rule for v in violations] == [CalibrationRule.DEADLINE]
    assert "d1" in violations[0].reason


def test_c3_forward_reference_within_the_same_tick_is_allowed() -> None:
    """C3: RGB and extrinsics may reference a new digest declared later in the same tick."""
    tr = CalibrationTracker({"a": True})
    _tick(tr, 1, "d1")
    _tick(tr, 2, "d2", roles=(RGB, T, Q, K))
    assert tr.digest("a") == "d2"
    assert _rules(tr) == []


def test_c4_undeclared_forward_reference_fails_at_the_next_tick() -> None:
    """C4: a forward reference not declared before the next tick fails closed."""
    tr = CalibrationTracker({"a": False})
    _tick(tr, 1, "d1")
    tr.observe("a", RGB, "d2", tick=2, generation=0)
    v = tr.observe("a", K, "d2", tick=3, generation=0)
    assert v is not None
    assert v.rule is CalibrationRule.DEADLINE
    assert "before the next tick" in v.reason


def test_c4_undeclared_forward_reference_fails_at_the_reset_barrier() -> None:
    """C4: a forward reference still open at a reset barrier fails closed."""
    tr = CalibrationTracker({"a": False})
    tr.observe("a", T, "d1", tick=1, generation=0)
    tr.barrier(1)
    assert [v.rule for v in tr.violations] == [CalibrationRule.DEADLINE]
    assert "reset barrier" in tr.violations[0].reason


def test_c4_undeclared_forward_reference_fails_at_the_terminal_cut() -> None:
    """C4: a forward reference still open at the terminal cut fails closed."""
    tr = CalibrationTracker({"a": False})
    tr.observe("a", Q, "d1", tick=1, generation=0)
    violations = tr.at_cut()
    assert [v.rule for v in violations] == [CalibrationRule.DEADLINE]
    assert "terminal cut" in violations[0].reason


def test_c5_required_camera_missing_a_sample_fails() -> None:
    """C5: a required camera's tick without its quaternion sample fails closed."""
    tr = CalibrationTracker({"a": True, "b": False})
    _tick(tr, 1, "d1", roles=(K, RGB, T))
    _tick(tr, 1, "e1", roles=(K, RGB), camera="b")
    violations = tr.at_cut()
    assert [(v.rule, v.camera) for v in violations] == [(CalibrationRule.COMPLETE, "a")]
    assert "quaternion_xyzw" in violations[0].reason


def test_c6_invalid_contract_fails() -> None:
    """C6: unknown camera, empty digest, two digests in a tick and backwards ticks fail."""
    tr = CalibrationTracker({"a": False})
    assert tr.observe("zz", K, "d", tick=1, generation=0) is not None
    assert tr.observe("a", RGB, "", tick=1, generation=0) is not None
    tr.observe("a", K, "d1", tick=1, generation=0)
    assert tr.observe("a", K, "d2", tick=1, generation=0) is not None
    assert tr.observe("a", K, "d1", tick=0, generation=0) is not None
    assert {v.rule for v in tr.violations} == {CalibrationRule.CONTRACT}
    assert len(tr.violations) == 4


def test_c7_each_generation_starts_undeclared() -> None:
    """C7: after a reset barrier the old digest no longer counts; it must be declared again."""
    tr = CalibrationTracker({"a": False})
    _tick(tr, 1, "d1")
    tr.barrier(1)
    assert tr.digest("a") is None
    tr.observe("a", RGB, "d1", tick=0, generation=1)
    tr.observe("a", RGB, "d1", tick=1, generation=1)
    assert [v.rule for v in tr.violations] == [CalibrationRule.DEADLINE]


def test_c7_records_of_a_new_generation_imply_the_barrier() -> None:
    """C7: a record of the next generation ends the previous one like a barrier."""
    tr = CalibrationTracker({"a": True})
    _tick(tr, 5, "d1")
    _tick(tr, 0, "d2", generation=1)
    assert tr.generation == 1
    assert _rules(tr) == []


def test_d1_first_descriptor_is_fixed() -> None:
    """D1: repeating a stream's first descriptor is not drift."""
    tr = DescriptorTracker()
    assert tr.observe("cameras.a.rgb", ("uint8", (4, 4, 3), "jpeg")) is None
    assert tr.observe("cameras.a.rgb", ("uint8", (4, 4, 3), "jpeg")) is None


def test_d2_changed_descriptor_is_drift() -> None:
    """D2: a changed shape mid-stream is descriptor drift, latched."""
    tr = DescriptorTracker()
    tr.observe("cameras.a.rgb", ("uint8", (4, 4, 3)))
    drift = tr.observe("cameras.a.rgb", ("uint8", (8, 4, 3)))
    assert drift is not None
    assert "descriptor changed" in drift.reason
    assert tr.drifts == (drift,)


def test_epochs_are_independent_per_camera() -> None:
    """Per camera: camera b cannot use the digest camera a declared; its reference stays open."""
    tr = CalibrationTracker({"a": False, "b": False})
    _tick(tr, 1, "d1", camera="a")
    tr.observe("b", RGB, "d1", tick=1, generation=0)
    violations = tr.at_cut()
    assert [(v.rule, v.camera) for v in violations] == [(CalibrationRule.DEADLINE, "b")]


def test_c8_an_optional_cameras_lost_intrinsics_marks_the_epoch_instead_of_failing() -> None:
    """C8: RGB and extrinsics forward-reference d2, its intrinsics sample is lost: no C4, one mark naming d1."""
    tr = CalibrationTracker({"a": False})
    _tick(tr, 1, "d1")
    tr.observe("a", RGB, "d2", tick=2, generation=0)
    tr.lost("a", K, tick=2, generation=0)
    _tick(tr, 2, "d2", roles=(T, Q))
    _tick(tr, 3, "d2", roles=(RGB, T, Q))  # the next tick's intrinsics is lost too
    tr.lost("a", K, tick=3, generation=0)
    assert _rules(tr) == []
    (mark,) = tr.lost_declarations
    assert (mark.camera, mark.generation, mark.digest, mark.epoch) == ("a", 0, "d2", "d1")
    assert (mark.first_tick, mark.ticks) == (2, 2)


def test_c8_a_first_tick_without_intrinsics_has_no_epoch_to_keep() -> None:
    """C8: the generation's first declaration lost: the mark's epoch is None."""
    tr = CalibrationTracker({"a": False})
    tr.lost("a", K, tick=1, generation=0)
    _tick(tr, 1, "d1", roles=(RGB, T, Q))
    assert _rules(tr) == []
    assert [(m.digest, m.epoch) for m in tr.lost_declarations] == [("d1", None)]


def test_c8_never_excuses_a_required_camera_or_another_lost_role() -> None:
    """C8 is for an optional camera's intrinsics only: a required camera, or a lost RGB, still fails C4."""
    required = CalibrationTracker({"a": True})
    required.observe("a", RGB, "d1", tick=1, generation=0)
    required.lost("a", K, tick=1, generation=0)
    assert CalibrationRule.DEADLINE in _rules(required)
    assert required.lost_declarations == ()
    optional = CalibrationTracker({"a": False})
    optional.observe("a", T, "d1", tick=1, generation=0)
    optional.lost("a", RGB, tick=1, generation=0)
    assert _rules(optional) == [CalibrationRule.DEADLINE]
