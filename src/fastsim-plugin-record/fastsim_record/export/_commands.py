"""Commands as numeric series, so an export shows them beside the joint states.

A ``control.audit`` ``command.issued`` record whose arguments hold one numeric vector
(``args.targets`` of ``set_joint_targets``, for example) becomes the series
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

__all__ = ["CommandSeries", "command_series"]


@attrs.frozen(eq=False)
class CommandSeries:
    """One issued command's vector: the series name, element names, units and values."""

    name: str
    names: tuple[str, ...]
    units: tuple[str, ...]
    values: npt.NDArray[np.float64]


def _declared(attributes: Mapping[str, Any], command: str, target: str) -> Mapping[str, Any]:
    for control in attributes.get("controls") or ():
        if isinstance(control, Mapping) and control.get("command") == command and control.get("target") == target:
            return control
    return {}


def command_series(stream: str, data: Mapping[str, Any], attributes: Mapping[str, Any]) -> CommandSeries | None:
    """The numeric series of one control record (``None`` unless it is an issued command
    carrying one numeric vector)."""
    if stream != "control.audit" or data.get("event") != "command.issued":
        return None
    args = data.get("args")
    if not isinstance(args, Mapping):
        return None
    vectors = [(key, value) for key, value in args.items() if isinstance(value, list) and value
               and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)]
    if len(vectors) != 1:
        return None
    arg, values = vectors[0]
    command, target = str(data.get("command")), str(data.get("target"))
    declared = _declared(attributes, command, target)
    names = declared.get("element_names")
    units = declared.get("units")
    n = len(values)
    return CommandSeries(
        name=f"{target}.{command}",
        names=tuple(str(v) for v in names) if isinstance(names, list) and len(names) == n
        else tuple(f"{arg}[{i}]" for i in range(n)),
        units=tuple(str(v) for v in units) if isinstance(units, list) and len(units) == n else ("",) * n,
        values=np.asarray(values, dtype=np.float64),
    )
