"""The pure domain core of Record: every recording guarantee is decided here.

Standard library and attrs only: no I/O, threads, clocks or logging (an
import-linter contract enforces it).  Data goes in through methods; decisions come
out as frozen values.  Each module's header holds its numbered rules table.

| module        | concern                                                            |
|---------------|--------------------------------------------------------------------|
| envelope      | ``Envelope``: the core's view of one stamped capture item          |
| lane          | bounded lanes, non-waiting ``try_publish``, overload policies      |
| merge         | ordered merge by global sequence; holes are held                   |
| gaps          | exact ordered ``GapRecord`` values, ``GapLedger``                  |
| generations   | pump validation (source continuity), per-generation stream index   |
| batching      | batch flush decisions                                              |
| epochs        | calibration epochs per camera and generation                       |
| descriptors   | descriptor drift                                                   |
| fence         | the terminal-cut fence: commit or abort, with a reason             |
| errors        | the few exceptions the core raises (construction-time contract)    |

Threading model (owned by the pipeline): a capture thread runs
``SourceContinuity.check`` then ``Lane.try_publish`` under the lane's lock; the one
writer thread drains lanes (``drain``/``take_gaps``) under the same lock and drives
``OrderedMerge``, ``GapLedger``, ``Batcher``, ``CalibrationTracker``,
``DescriptorTracker`` and finally ``decide`` without locks.
"""

from fastsim_record.core.batching import (
    Batcher,
    BatchHold,
    BatchLimits,
    BatchSummary,
    FlushReason,
    flush_reason,
)
from fastsim_record.core.descriptors import DescriptorDrift, DescriptorTracker
from fastsim_record.core.envelope import SIZE_CEILING, Envelope, EnvelopeKind, LaneName
from fastsim_record.core.epochs import (
    CalibrationRule,
    CalibrationTracker,
    CalibrationViolation,
    CameraRole,
)
from fastsim_record.core.errors import CoreContractError, CoreError, InvalidLimits, LanePolicyError
from fastsim_record.core.fence import (
    FenceDecision,
    FenceEvidence,
    FenceRule,
    FenceViolation,
    TerminalCut,
    decide,
    gather_evidence,
)
from fastsim_record.core.gaps import GapLedger, GapReason, GapRecord, coalesce
from fastsim_record.core.generations import Discontinuity, SourceContinuity, StreamIndexer
from fastsim_record.core.lane import (
    ACCEPTED,
    Admission,
    AdmissionOutcome,
    Lane,
    LaneCounters,
    LaneSpec,
    OverloadPolicy,
    overload_problem,
)
from fastsim_record.core.merge import MergeConflict, OrderedMerge

__all__ = [
    # envelope
    "SIZE_CEILING",
    "Envelope",
    "EnvelopeKind",
    "LaneName",
    # lane
    "ACCEPTED",
    "Admission",
    "AdmissionOutcome",
    "Lane",
    "LaneCounters",
    "LaneSpec",
    "OverloadPolicy",
    "overload_problem",
    # merge and gaps
    "MergeConflict",
    "OrderedMerge",
    "GapLedger",
    "GapReason",
    "GapRecord",
    "coalesce",
    # generations
    "Discontinuity",
    "SourceContinuity",
    "StreamIndexer",
    # batching
    "BatchHold",
    "BatchLimits",
    "BatchSummary",
    "Batcher",
    "FlushReason",
    "flush_reason",
    # calibration and descriptors
    "CalibrationRule",
    "CalibrationTracker",
    "CalibrationViolation",
    "CameraRole",
    "DescriptorDrift",
    "DescriptorTracker",
    # fence
    "FenceDecision",
    "FenceEvidence",
    "FenceRule",
    "FenceViolation",
    "TerminalCut",
    "decide",
    "gather_evidence",
    # errors
    "CoreContractError",
    "CoreError",
    "InvalidLimits",
    "LanePolicyError",
]
