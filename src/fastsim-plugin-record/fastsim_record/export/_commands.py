"""Commands as numeric series, so an export shows them beside the joint states.

A ``control.audit`` ``command.issued`` record whose arguments hold one numeric value or
vector (``args.targets`` of ``set_joint_targets``, for example) becomes the series
``command/<target>.<command>``.  Its element names and units come from the Run's
``controls`` in the run metadata (what the scene declared a driver may command), else
``<arg>[i]``.  Exporters log it as they log a numeric channel: MCAP on
``/command/<target>.<command>`` with the ``fsr.numeric`` schema, Rerun as ``Scalars`` at
``command/<target>.<command>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_recording_format.reading._actions import command_vector, declared, element_labels

__all__ = ["CommandSeries", "command_series"]


@attrs.frozen(eq=False)
class CommandSeries:
    """One issued command's vector: the series name, element names, units and values."""

    name: str
    names: tuple[str, ...]
    units: tuple[str, ...]
    values: npt.NDArray[np.float64]


def command_series(stream: str, data: Mapping[str, Any], attributes: Mapping[str, Any]) -> CommandSeries | None:
    """The numeric series of one control record (``None`` unless it is an issued command
    carrying one numeric value or vector: the reading API's ``command_vector``, the same
    rule ``Recording.actions()`` applies)."""
    if stream != "control.audit":
        return None
    got = command_vector(data)
    if got is None:
        return None
    arg, values = got
    command, target = str(data.get("command")), str(data.get("target"))
    control = next((c for c in declared(attributes) if c.get("command") == command and c.get("target") == target), {})
    names, units = element_labels(control, arg, len(values))
    return CommandSeries(name=f"{target}.{command}", names=names, units=units,
                         values=np.asarray(values, dtype=np.float64))
