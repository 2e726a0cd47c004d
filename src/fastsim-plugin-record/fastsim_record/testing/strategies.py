"""The project's one module of hypothesis strategies, shared by every test package.

Each owner adds a ``# --- <area> ---`` section; strategies build values only (no I/O).

Importing this module needs no hypothesis (a plain install has none): ``st`` and
``composite`` load it on first use, so only calling a strategy needs the ``test`` extra.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fastsim_record.core.batching import BatchLimits
from fastsim_record.core.captured import CapturedItem, LaneName
from fastsim_record.core.fence import FenceEvidence, TerminalCut
from fastsim_record.core.lane import LaneSpec, OverloadPolicy
from fastsim_record.testing.envelopes import EnvelopeFactory
from fastsim_recording_format import RecordIn, RecordKind, StreamSpec
from fastsim_recording_format.encoding import readonly

if TYPE_CHECKING:
    from hypothesis import strategies as st

    composite = st.composite
else:

    class _Hypothesis:
        """``hypothesis.strategies``, imported on first attribute access."""

        def __getattr__(self, name: str) -> Any:
            return getattr(importlib.import_module("hypothesis.strategies"), name)

    st = _Hypothesis()

    def composite(function: Callable[..., Any]) -> Callable[..., Any]:
        """``st.composite``, applied when the strategy is first built (not at import)."""

        @functools.wraps(function)
        def build(*args: Any, **kwargs: Any) -> Any:
            return st.composite(function)(*args, **kwargs)

        return build


__all__ = [
    "render_states",
    "envelope_scripts",
    "lane_specs",
    "fence_cases",
    "batch_limits",
    "batch_records",
]


# --- render ---


def _readonly(values: list[float], dtype: str, shape: tuple[int, ...]) -> NDArray[Any]:
    return readonly(np.array(values, dtype=dtype).reshape(shape))


@functools.cache
def _entity() -> st.SearchStrategy[str]:
    return st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789.", min_size=1, max_size=8)


@functools.cache
def _float() -> st.SearchStrategy[float]:
    return st.floats(allow_nan=True, allow_infinity=True, width=64)


@functools.cache
def _float_dtype() -> st.SearchStrategy[str]:
    return st.sampled_from(["<f8", "<f4", ">f8"])


@composite
def _vector(draw: st.DrawFn, n: int, dtype: str) -> NDArray[Any]:
    values = draw(st.lists(_float(), min_size=n, max_size=n))
    with np.errstate(over="ignore"):
        return _readonly(values, dtype, (n,))


@composite
def render_states(draw: st.DrawFn, max_particles: int = 64) -> Mapping[str, NDArray[Any]]:
    """A valid ``render.state`` capture mapping: articulations, rigid bodies and fluids."""
    state: dict[str, NDArray[Any]] = {}
    for name in draw(st.lists(_entity(), max_size=3, unique=True)):
        n = draw(st.integers(0, 16))
        dtype = draw(_float_dtype())
        state[f"articulation/{name}/joint_position"] = draw(_vector(n, dtype))
        state[f"articulation/{name}/joint_velocity"] = draw(_vector(n, dtype))
        if draw(st.booleans()):
            state[f"articulation/{name}/root_pose"] = draw(_vector(7, dtype))
        if draw(st.booleans()):
            state[f"articulation/{name}/root_twist"] = draw(_vector(6, dtype))
    for name in draw(st.lists(_entity(), max_size=3, unique=True)):
        dtype = draw(_float_dtype())
        state[f"rigid/{name}/pose"] = draw(_vector(7, dtype))
        state[f"rigid/{name}/linear_velocity"] = draw(_vector(3, dtype))
        state[f"rigid/{name}/angular_velocity"] = draw(_vector(3, dtype))
    for name in draw(st.lists(_entity(), max_size=2, unique=True)):
        count = draw(st.integers(0, max_particles))
        values = draw(st.lists(st.floats(width=32), min_size=3 * count, max_size=3 * count))
        state[f"fluid/{name}/positions"] = _readonly(values, "<f4", (count, 3))
    if not state:
        state["rigid/only/pose"] = _readonly([0.0] * 6 + [1.0], "<f8", (7,))
        state["rigid/only/linear_velocity"] = _readonly([0.0] * 3, "<f8", (3,))
        state["rigid/only/angular_velocity"] = _readonly([0.0] * 3, "<f8", (3,))
    return state


__all__ += ["render_byte_flips", "render_junk", "render_rate_cases"]


def render_junk() -> st.SearchStrategy[tuple[bytes, int]]:
    """Random bodies and declared sizes for a forged ``render.state`` payload."""
    return st.tuples(st.binary(max_size=256), st.integers(0, 1 << 16))


def render_byte_flips() -> st.SearchStrategy[tuple[float, int]]:
    """(relative position in [0, 1), non-zero xor mask) of one flipped payload byte."""
    return st.tuples(st.floats(0.0, 1.0, exclude_max=True), st.integers(1, 255))


def render_rate_cases() -> st.SearchStrategy[tuple[float, float, int]]:
    """(rate_hz, sensor_hz, ticks) for rate-gate properties."""
    return st.tuples(
        st.floats(0.5, 240.0, allow_nan=False),
        st.sampled_from([15.0, 30.0, 60.0, 100.0, 120.0, 240.0]),
        st.integers(1, 2000),
    )


# --- core ---

_CORE_SOURCES = ("lifecycle", "observations", "cameras")


@composite
def envelope_scripts(
    draw: st.DrawFn,
    *,
    min_size: int = 0,
    max_size: int = 40,
    required: bool | None = None,
    barriers: bool = True,
) -> list[CapturedItem]:
    """Envelopes in publication order, stamped as Core would (global 1..n, contiguous
    capture sequence per source, barriers on ``observations`` opening generations).

    ``required`` forces every record's required flag; ``None`` draws it per stream.
    """
    factory = EnvelopeFactory()
    streams = {
        "lifecycle": ["lifecycle"],
        "observations": ["numeric.tick"],
        "cameras": ["cameras.a.rgb", "cameras.b.rgb"],
    }
    flags = {
        s: (required if required is not None else draw(st.booleans()))
        for ss in streams.values()
        for s in ss
    }
    out: list[CapturedItem] = []
    for _ in range(draw(st.integers(min_size, max_size))):
        step = draw(st.integers(0, 19))
        if step == 0:
            factory.next_tick()
        if step == 1 and barriers:
            out.append(factory.barrier())
            continue
        source = draw(st.sampled_from(_CORE_SOURCES))
        stream = draw(st.sampled_from(streams[source]))
        size = draw(st.one_of(st.none(), st.integers(0, 4096))) if source == "lifecycle" else draw(
            st.integers(0, 4096)
        )
        out.append(factory.record(stream, source=source, required=flags[stream], size=size))
    return out


def lane_specs(
    name: LaneName | None = None, *, lossy: bool | None = None, max_items: int = 8
) -> st.SearchStrategy[LaneSpec]:
    """Lane specs with small limits (``lossy`` picks the policy family)."""
    policies = list(OverloadPolicy)
    if lossy is True:
        policies = [p for p in policies if p.lossy]
    elif lossy is False:
        policies = [OverloadPolicy.FAIL_RUN]
    names = [name] if name is not None else [LaneName.NUMERIC, LaneName.MEDIA]
    return st.builds(
        LaneSpec,
        name=st.sampled_from(names),
        max_items=st.integers(1, max_items),
        max_bytes=st.integers(1, 16_384),
        overload=st.sampled_from(policies),
    )


@composite
def fence_cases(draw: st.DrawFn) -> tuple[TerminalCut | None, FenceEvidence]:
    """A terminal cut (or none) and fence evidence that may or may not match it."""
    sources = draw(st.dictionaries(st.sampled_from(_CORE_SOURCES), st.integers(0, 50), max_size=3))
    final = draw(st.integers(0, 200))
    cut = None if draw(st.integers(0, 9)) == 0 else TerminalCut(final, sources)
    exact = draw(st.booleans())
    progress = dict(sources) if exact else draw(
        st.dictionaries(st.sampled_from(_CORE_SOURCES), st.integers(0, 50), max_size=3)
    )
    released = final if exact else draw(st.integers(0, 210))
    evidence = FenceEvidence(
        released_through=released,
        source_progress=progress,
        held=draw(st.integers(0, 3)),
        required_losses=tuple(draw(st.lists(st.sampled_from(["numeric.tick", "lifecycle"]), max_size=1))),
        calibration_violations=tuple(draw(st.lists(st.just("camera 'a' missing intrinsics"), max_size=1))),
        fatal_errors=tuple(draw(st.lists(st.just("numeric lane overflow"), max_size=1))),
        gaps=draw(st.integers(0, 2)),
    )
    return cut, evidence


def batch_limits() -> st.SearchStrategy[BatchLimits]:
    """Small positive batch limits so every flush path is reachable."""
    return st.builds(
        BatchLimits,
        max_items=st.integers(1, 8),
        max_bytes=st.integers(1, 4096),
        max_sim_span_ns=st.integers(1, 50),
    )


def batch_records(max_size: int = 40) -> st.SearchStrategy[list[tuple[int, int, int]]]:
    """(generation, sim_time_ns, payload_bytes) triples with non-decreasing generation."""
    return st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 100), st.integers(0, 1500)), max_size=max_size
    ).map(lambda rs: sorted(rs, key=lambda r: r[0]))


# --- FSR ---

__all__ += ["fsr_json_values", "fsr_stream_tables", "fsr_recordings"]


@functools.cache
def _fsr_text() -> st.SearchStrategy[str]:
    return st.text(st.characters(exclude_categories=["Cs"]), max_size=12)


def fsr_json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """JSON-able values (no NaN/Infinity), including non-ASCII text and big integers."""
    leaves = (
        st.none() | st.booleans() | st.integers(-(2**70), 2**70)
        | st.floats(allow_nan=False, allow_infinity=False) | _fsr_text()
    )
    return st.recursive(
        leaves,
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_fsr_text(), kids, max_size=3),
        max_leaves=max_leaves,
    )


@functools.cache
def _fsr_meta() -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(_fsr_text(), fsr_json_values(4), max_size=3)


@composite
def fsr_stream_tables(draw: st.DrawFn, max_streams: int = 4) -> list[StreamSpec]:
    """A stream table: unique ids and names, JSON codec and attributes."""
    ids = draw(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=max_streams, unique=True))
    return [
        StreamSpec(
            sid, f"s{k}.{draw(_fsr_text().filter(bool))}", draw(st.sampled_from(["observation", "camera.rgb", "event"])),
            draw(_fsr_meta()), draw(_fsr_meta()),
        )
        for k, sid in enumerate(ids)
    ]


@composite
def fsr_recordings(
    draw: st.DrawFn, max_records: int = 40, max_payload: int = 64
) -> tuple[list[StreamSpec], list[list[RecordIn]]]:
    """A valid recording: a stream table and its records split into non-empty batches.

    Global sequences tile from a drawn start; each stream's sequences tile; per stream
    (generation, sim_time_ns) never decreases; GAP records cover drawn ranges; BARRIER
    records raise their stream's generation.
    """
    streams = draw(fsr_stream_tables())
    g = draw(st.integers(0, 2**40))
    seq = {s.stream_id: draw(st.integers(0, 1000)) for s in streams}
    clock = {s.stream_id: (0, draw(st.integers(-(2**40), 2**40))) for s in streams}
    records: list[RecordIn] = []
    for _ in range(draw(st.integers(0, max_records))):
        sid = draw(st.sampled_from([s.stream_id for s in streams]))
        kind = draw(st.sampled_from([RecordKind.DATA, RecordKind.DATA, RecordKind.GAP, RecordKind.BARRIER]))
        gen, t = clock[sid]
        if kind is RecordKind.BARRIER:
            gen, t = gen + 1, draw(st.integers(-(2**20), 2**20))
        else:
            t += draw(st.integers(0, 10**9))
        clock[sid] = (gen, t)
        meta = draw(_fsr_meta())
        if kind is RecordKind.GAP:
            glen, slen = draw(st.integers(1, 5)), draw(st.integers(1, 5))
            rec = RecordIn(sid, kind, g, seq[sid], gen, t, b"", meta, g + glen - 1, seq[sid] + slen - 1)
        else:
            glen = slen = 1
            rec = RecordIn(sid, kind, g, seq[sid], gen, t, draw(st.binary(max_size=max_payload)), meta)
        records.append(rec)
        g += glen
        seq[sid] += slen
    batches: list[list[RecordIn]] = []
    while records:
        cut = draw(st.integers(1, len(records)))
        batches.append(records[:cut])
        records = records[cut:]
    return streams, batches


# --- pipeline ---

__all__ += ["PIPELINE_OPS", "publish_scripts"]

#: What a publishing script can do on the fake Core, one op per step:
#: ``tick`` (observation + control audit/result), ``event``, ``lifecycle``, ``reset``,
#: ``hold``/``release`` (delay the events source: out-of-order arrival).
PIPELINE_OPS = ("tick", "event", "lifecycle", "reset", "hold", "release")


@composite
def publish_scripts(draw: st.DrawFn, max_ops: int = 60) -> list[str]:
    """A publishing script for ``fastsim_record.testing.harness.Harness``.

    Ticks dominate; a held source is always released before the script ends.
    """
    weights = st.sampled_from(("tick",) * 6 + ("event", "event", "lifecycle", "reset", "hold", "release"))
    ops = draw(st.lists(weights, min_size=1, max_size=max_ops))
    if "hold" in ops and ops[-1] != "release":
        ops.append("release")
    return ops
