"""The pure domain core of Record: every recording guarantee is decided here.

Standard library and attrs only: no I/O, threads, clocks or logging (an
import-linter contract enforces it).  Data goes in through methods; decisions come
out as frozen values.  Each module's header holds its numbered rules table.

| module        | concern                                                            |
|---------------|--------------------------------------------------------------------|
| captured      | ``CapturedItem``: the core's view of one stamped capture item      |
|               | (the contract's ``Envelope`` after the Core binding); ``LaneName``  |
| admission     | lane specs, overload policies, counters and admission answers      |
| lane          | bounded lanes, non-waiting ``try_publish``, blocks of ticks        |
| merge         | ordered merge by global sequence; holes are held                   |
| gaps          | exact ordered ``GapRecord`` values, ``GapLedger``                  |
| generations   | pump validation (source continuity), per-generation stream index   |
| batching      | batch flush decisions                                              |
| epochs        | calibration epochs per camera and generation                       |
| descriptors   | descriptor drift                                                   |
| fence         | the terminal-cut fence: commit or abort, with a reason             |
| errors        | the few exceptions the core raises; ``RuleId``, the rule-id type   |

Threading model (owned by the pipeline): a capture thread runs
``SourceContinuity.check`` then ``Lane.try_publish`` under the lane's lock; the one
writer thread drains lanes (``drain``/``take_gaps``) under the same lock and drives
``OrderedMerge``, ``GapLedger``, ``Batcher``, ``CalibrationTracker``,
``DescriptorTracker`` and finally ``decide`` without locks.
"""

# Every name each module lists in its ``__all__`` is re-exported here, so the package
# surface and the modules' own lists can never disagree.
from fastsim_record.core.admission import *  # noqa: F403
from fastsim_record.core.batching import *  # noqa: F403
from fastsim_record.core.captured import *  # noqa: F403
from fastsim_record.core.descriptors import *  # noqa: F403
from fastsim_record.core.epochs import *  # noqa: F403
from fastsim_record.core.errors import *  # noqa: F403
from fastsim_record.core.fence import *  # noqa: F403
from fastsim_record.core.gaps import *  # noqa: F403
from fastsim_record.core.generations import *  # noqa: F403
from fastsim_record.core.lane import *  # noqa: F403
from fastsim_record.core.merge import *  # noqa: F403
