"""Every released schema of the Record component, 0.3.0 through 0.3.12.

Each version is a ``SchemaProfile``: which authored keys exist, which rules apply and
which defaults differ.  The history (see ``docs/catalog-history.md``):

    | version | schema change                                                          |
    |---------|------------------------------------------------------------------------|
    | 0.3.0   | ordered per-channel observations; native FSR camera streams (raw RGB, |
    |         | no ``encoding``/``quality``); global sources and finalize unrestricted |
    | 0.3.1   | none (package compatibility only)                                      |
    | 0.3.2   | ``streams.render_state`` {enabled, rate_hz}                            |
    | 0.3.3   | none (structural-validation writer; integrity default unchanged)       |
    | 0.3.4   | none (atomic numeric tick records)                                     |
    | 0.3.5   | none (producer-computed critical envelope sizes, Core 0.1.0a33)        |
    | 0.3.6   | camera ``encoding`` jpeg|png and ``quality``; JPEG quality 92 default  |
    | 0.3.7   | none (worker-only encoding hardening)                                  |
    | 0.3.8   | rejects: global sources switched off, preserve_incomplete false,       |
    |         | non-empty postprocessors                                               |
    | 0.3.9   | none (exact FinalizerRegistrationRequest / TerminalSemanticCut values) |
    | 0.3.10  | none (startup-history replay from global sequence 1)                   |
    | 0.3.11  | none (fluid.emissions stream when Core exposes fluid.audit)            |
    | 0.3.12  | ``streams.geometry`` {enabled, rate_hz} via scene.geometry@2           |
"""

from __future__ import annotations

import attrs

__all__ = ["LATEST", "PROFILES", "VERSIONS", "SchemaProfile", "profile"]


@attrs.frozen
class SchemaProfile:
    """What one catalog version's config schema accepts."""

    version: str
    summary: str
    render_state: bool
    camera_codecs: bool
    strict_prepare_contract: bool
    fluid_emissions: bool
    geometry: bool


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


_SUMMARIES = {
    "0.3.0": "ordered per-channel observation capture and native FSR camera streams (raw RGB)",
    "0.3.1": "package compatibility only; schema unchanged from 0.3.0",
    "0.3.2": "optional render.state trajectory: streams.render_state",
    "0.3.3": "structural-validation writer without payload hashing; schema unchanged",
    "0.3.4": "atomic per-tick numeric observation records; schema unchanged",
    "0.3.5": "producer-computed critical envelope sizes (Core 0.1.0a33); schema unchanged",
    "0.3.6": "camera encoding jpeg|png with quality; JPEG quality 92 by default",
    "0.3.7": "worker-only image encoding; schema unchanged",
    "0.3.8": "schema rejects disabled global sources, preserve_incomplete false and postprocessors",
    "0.3.9": "exact Core finalizer registration and terminal-cut values; schema unchanged",
    "0.3.10": "startup-history replay from global sequence 1; schema unchanged",
    "0.3.11": "fluid.emissions when Core exposes fluid.audit; schema unchanged",
    "0.3.12": "optional scene geometry: streams.geometry via scene.geometry@2",
}


def _profile(version: str) -> SchemaProfile:
    v = _key(version)
    return SchemaProfile(
        version=version,
        summary=_SUMMARIES[version],
        render_state=v >= (0, 3, 2),
        camera_codecs=v >= (0, 3, 6),
        strict_prepare_contract=v >= (0, 3, 8),
        fluid_emissions=v >= (0, 3, 11),
        geometry=v >= (0, 3, 12),
    )


VERSIONS: tuple[str, ...] = tuple(sorted(_SUMMARIES, key=_key))
LATEST = VERSIONS[-1]
PROFILES: dict[str, SchemaProfile] = {v: _profile(v) for v in VERSIONS}


def profile(version: str) -> SchemaProfile:
    """The schema profile of ``version`` (``KeyError`` if the catalog has no such version)."""
    return PROFILES[version]
