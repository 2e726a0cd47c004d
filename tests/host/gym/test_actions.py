"""FastSimRun-v0's action check and conversion (``spaces.check_action`` / ``commands_for``):
one conversion to plain floats, bounds checked over it, the same messages as before."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastsim_embedded.backends.base import ControlSpec
from fastsim_embedded.gym.spaces import check_action, commands_for

ARM = ControlSpec("set_joint_targets", "robot", "targets", ("j1", "j2", "j3"), ("rad",) * 3,
                  (-1.0, -2.0, -math.inf), (1.0, 2.0, math.inf))
GRIP = ControlSpec("set_gripper", "gripper", "width", ("w",), ("m",), (0.0,), (0.08,))


def test_an_action_becomes_plain_floats_bit_for_bit() -> None:
    """The command carries the action's float64 values as Python floats, unchanged."""
    action = np.array([np.nextafter(1.0, 0.0), -2.0, 1e300], dtype=np.float64)
    (command,) = commands_for([ARM], action, "gym-7")
    values = command.args["targets"]
    assert isinstance(values, list)
    assert [type(v) for v in values] == [float, float, float]
    assert np.array_equal(np.array(values), action)
    assert np.array(values).tobytes() == action.tobytes()
    assert (command.command_id, command.name, command.target) == ("gym-7", "set_joint_targets", "robot")
    assert check_action(ARM, [1, -2, 0]) == [1.0, -2.0, 0.0]
    assert check_action(ARM, np.array([0.5, 0.25, -0.125], dtype=np.float32)) == [0.5, 0.25, -0.125]


@pytest.mark.parametrize(("values", "message"), [
    ([1.5, 0.0, 0.0], r"'j1' \(index 0\) = 1.5 is above its bound 1.0"),
    ([0.0, -2.5, 0.0], r"'j2' \(index 1\) = -2.5 is below its bound -2.0"),
    ([0.0, 0.0, math.inf], r"'j3' \(index 2\) is inf, not a finite number"),  # within an infinite bound
    ([0.0, math.nan, 0.0], r"'j2' \(index 1\) is nan, not a finite number"),
    ([-math.inf, 5.0, 0.0], r"'j1' \(index 0\) is -inf, not a finite number"),  # the first failing element
])
def test_an_action_outside_the_bounds_names_the_first_element_and_its_bound(values: list[float], message: str) -> None:
    """An action outside the bounds names the first element and its bound."""
    with pytest.raises(ValueError, match=message):
        check_action(ARM, values)


def test_several_controls_take_a_mapping_and_check_every_part_before_sending() -> None:
    """Several controls take a mapping and check every part before sending."""
    both = [ARM, GRIP]
    commands = commands_for(both, {"set_joint_targets": [0.0, 0.0, 0.0], "set_gripper": np.array([0.04])}, "gym-2")
    assert [(c.command_id, c.args) for c in commands] == [
        ("gym-2-set_joint_targets", {"targets": [0.0, 0.0, 0.0]}), ("gym-2-set_gripper", {"width": [0.04]}),
    ]
    with pytest.raises(ValueError, match=r"'w' \(index 0\) = 0.1 is above its bound 0.08"):
        commands_for(both, {"set_joint_targets": [0.0, 0.0, 0.0], "set_gripper": [0.1]}, "gym-3")
    with pytest.raises(ValueError, match="missing 'set_gripper'"):
        commands_for(both, {"set_joint_targets": [0.0, 0.0, 0.0]}, "gym-4")
    with pytest.raises(ValueError, match="expected shape"):
        commands_for([ARM], [[0.0, 0.0, 0.0]], "gym-5")
    with pytest.raises(ValueError, match="not numbers"):
        commands_for([ARM], ["a", "b", "c"], "gym-6")
