"""``render.state`` on the capture side: the format's codec, raising the plugin's error.

The key table, the payload layout and the bounded decoder are the format's,
:mod:`fastsim_recording_format.codecs.render_state`.  Core's capture path hands Record
a mapping of read-only arrays that is already plain codec input, so this adapter only
re-raises the format's :class:`~fastsim_recording_format.errors.RenderStatePayloadError`
as the plugin's :class:`RenderStatePayloadError`, which is both (``except RecordError``
in the writer worker still catches it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from fastsim_record.adapters.payloads import raising
from fastsim_record.errors import RecordError
from fastsim_recording_format.codecs import render_state as fmt
from fastsim_recording_format.codecs.render_state import SCHEMA, STREAM_CODEC, Layout

__all__ = [
    "SCHEMA",
    "STREAM_CODEC",
    "Layout",
    "RenderStatePayloadError",
    "check_state",
    "encode_render_state",
    "encode_with_layout",
    "layout_for",
    "layout_of",
]


_P = ParamSpec("_P")
_R = TypeVar("_R")


class RenderStatePayloadError(fmt.RenderStatePayloadError, RecordError):
    """The format's render-state payload error, raised on the capture side (a ``RecordError``)."""


def _plugin_errors(function: Callable[_P, _R]) -> Callable[_P, _R]:
    return raising(RenderStatePayloadError, function)


check_state = _plugin_errors(fmt.check_state)
layout_of = _plugin_errors(fmt.layout_of)
layout_for = _plugin_errors(fmt.layout_for)
encode_with_layout = _plugin_errors(fmt.encode_with_layout)
encode_render_state = _plugin_errors(fmt.encode_render_state)
