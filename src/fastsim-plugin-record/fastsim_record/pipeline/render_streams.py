"""The optional render-side sources: ``render.state``, ``geometry`` and ``fluid.emissions``.

The composition root (``fastsim_record.bootstrap``) asks this module which of them a
config selects; their lanes, stream kinds, encoders and grants are rows of the source
registry (``fastsim_record.sources``).  Nothing here runs on the capture path.

Selection (``render_kinds``):

    | # | source          | selected when                               |
    |---|-----------------|---------------------------------------------|
    | 1 | render.state    | ``streams.render_state.enabled``            |
    | 2 | geometry        | ``streams.geometry.enabled``                |
    | 3 | fluid.emissions | ``"fluid.audit" in RunContext.services``    |

All three streams are required.  Disabled sources are not selected, so no pump, no
subscription and no grant: Core then never samples state, reads a catalog or queries a
transform for Record.  A Run without ``fluid.audit`` keeps exactly the previous stream
set.  The sampling rate is not Record's to apply: Core compiled it into the capture
plan (``render_state_hz``/``geometry_hz``) before anything was read or sequenced;
Record only checks that the plan matches its config.

Render Replay (``replay_identity``): when Core runs a camera-only Replay it exposes the
``render.replay`` service and a ``replay`` attribute on the run context
(:class:`~fastsim_contract.render_services.ReplaySource`); the artifact is then written
with ``mode: render``, the source FSR's SHA-256, and the complete render-state source
sequence in its terminal fence.
"""

from __future__ import annotations

from typing import Any

from fastsim_contract.protocols import RunContext
from fastsim_contract.render_services import FLUID_AUDIT_SERVICE, ReplaySource
from fastsim_contract.run_errors import RunIssue
from fastsim_record.config.model import RecordConfig
from fastsim_record.errors import ConfigError

__all__ = ["render_kinds", "replay_identity"]

_CONFIG = "plugins.record.config.streams"


def _check_rate(name: str, configured: float, planned: float | None) -> None:
    if planned is None or abs(planned - configured) > 1e-9 * max(1.0, configured):
        raise ConfigError([RunIssue(
            f"{_CONFIG}.{name}.rate_hz",
            f"Core's capture plan samples {name} at {planned} Hz, the config asks {configured} Hz",
        )])


def render_kinds(config: RecordConfig, run: RunContext) -> list[str]:
    """Rows 1-3: the selected render-side source kinds (empty when all are off)."""
    streams = config.streams
    plan = run.capture
    kinds: list[str] = []
    if streams.render_state.enabled:
        _check_rate("render_state", streams.render_state.rate_hz, plan.render_state_hz)
        kinds.append("render.state")
    if streams.geometry.enabled:
        _check_rate("geometry", streams.geometry.rate_hz, plan.geometry_hz)
        kinds.append("geometry")
    if FLUID_AUDIT_SERVICE in run.services:
        kinds.append("fluid.emissions")
    return kinds


def replay_identity(run: RunContext) -> tuple[str, str | None, dict[str, Any]]:
    """``(mode, source_sha256, fence extra)`` of the artifact this Run writes."""
    replay = getattr(run, "replay", None)
    if not isinstance(replay, ReplaySource):
        return "record", None, {}
    return "render", replay.source_sha256, {"render_source": replay.fence()}
