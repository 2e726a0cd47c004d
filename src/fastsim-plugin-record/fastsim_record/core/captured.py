"""``CapturedItem``: the core's view of one captured item, an immutable stamped envelope.

Core (the host) stamps every captured item before Record sees it, as a contract
``fastsim_contract.values.Envelope``; the Core binding turns each into a
``CapturedItem`` (a distinct name: the domain core never sees the contract's type).  The domain core
needs only these facts; the payload is opaque and never inspected here.

| field              | meaning                                                           |
|--------------------|-------------------------------------------------------------------|
| global_sequence    | global recording sequence, contiguous across all selected sources |
| source             | the selected source that published it (as named in the cut)       |
| capture_sequence   | persistence-continuity sequence, contiguous per source from 1     |
| stream             | the FSR stream key the record is written to                       |
| lane               | the bounded lane that carries it (critical, numeric, media)       |
| generation         | Runtime generation; a reset barrier starts the next one           |
| tick               | committed simulation tick                                         |
| sim_time_ns        | simulation time of the record                                     |
| required           | loss on this stream is fatal                                      |
| size               | producer-computed portable byte size, or ``None`` if unknown      |
| kind               | an ordinary record or a generation (reset) barrier                |
| channel_sequence   | the live per-channel sequence: diagnostic metadata only           |
| payload            | opaque; excluded from equality                                    |

``CapturedRun`` is a run of consecutive captured items of one source, stream and
generation whose global sequences are contiguous (``first_global .. last_global``) and
whose capture sequences are contiguous too: the writer worker's columnar form of many
numeric ticks.  Each item of the run is still one atomic record; the core sees only the
run's bounds (the merge releases it like the items it stands for), and its payload (the
records' columns) is opaque.

An item whose ``size`` is ``None`` is charged at the conservative service ceiling
(``SIZE_CEILING`` = 1 MiB) by lane byte admission.
"""

from __future__ import annotations

import enum

import attrs

__all__ = ["SIZE_CEILING", "CapturedItem", "CapturedRun", "EnvelopeKind", "LaneName"]

class LaneName(enum.StrEnum):
    """The three bounded lanes: the one lane-name type (ports, pipeline and core).

    A ``StrEnum``: ``str(LaneName.NUMERIC) == "numeric"``, the config's queue key."""

    CRITICAL = "critical"  # lifecycle, control audit, control results, plugin events
    NUMERIC = "numeric"  # selected non-media observations
    MEDIA = "media"  # selected camera envelopes


class EnvelopeKind(enum.Enum):
    """What an envelope is: an ordinary record or a generation barrier (Runtime reset)."""

    RECORD = "record"
    BARRIER = "barrier"


#: Bytes charged for an item that carries no producer-computed size (1 MiB).
SIZE_CEILING = 1 << 20


@attrs.frozen(kw_only=True)
class CapturedItem:
    """One immutable, stamped capture item as the core sees it."""

    global_sequence: int
    source: str
    capture_sequence: int
    stream: str
    lane: LaneName
    generation: int = 0
    tick: int = 0
    sim_time_ns: int = 0
    required: bool = True
    size: int | None = None
    kind: EnvelopeKind = EnvelopeKind.RECORD
    channel_sequence: int | None = None
    payload: object = attrs.field(default=None, eq=False, repr=False)

    @property
    def is_barrier(self) -> bool:
        """True for a generation (reset) barrier."""
        return self.kind is EnvelopeKind.BARRIER

    @property
    def admission_size(self) -> int:
        """Bytes charged by lane admission: the producer size, else the 1 MiB ceiling."""
        size = self.size
        return SIZE_CEILING if size is None else size


@attrs.frozen(kw_only=True)
class CapturedRun:
    """Consecutive captured items of one source, stream and generation (module header).

    ``first_global .. last_global`` and ``first_capture .. last_capture`` are contiguous
    and equally long; the worker releases the run as one entry in global order."""

    source: str
    stream: str
    lane: LaneName
    generation: int
    first_global: int
    last_global: int
    first_capture: int
    last_capture: int
    payload: object = attrs.field(default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        count = self.last_global - self.first_global
        if count < 0 or self.last_capture - self.first_capture != count or self.first_global < 1:
            raise ValueError(
                f"CapturedRun: global {self.first_global}..{self.last_global} and capture "
                f"{self.first_capture}..{self.last_capture} must be contiguous ranges of one length"
            )

    @property
    def count(self) -> int:
        """Items in the run."""
        return self.last_global - self.first_global + 1
