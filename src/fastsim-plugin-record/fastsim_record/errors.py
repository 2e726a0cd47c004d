"""The plugin's one error hierarchy.

Every error carries structured fields, and ``str(error)`` is one line a person can act
on (both come from ``fastsim_record.core.errors.ReasonedError``, which the domain core's
``DomainError`` shares).  A ``ConfigError`` carries the Core contract's issue type,
``fastsim_contract.run_errors.RunIssue`` (a dotted path from the Run root and a message),
the one issue type of Run and plugin config alike.  Errors from the self-contained ``fastsim_recording_format`` package (``FormatError``) and
from the host are translated into this hierarchy at the boundary that meets them.

    RecordError
    +-- ConfigError            authored Run/config is invalid (one or more ``path: message``)
    +-- RecordingFailed        a latched fatal recording error (lane, pump, worker, fence)
    |   +-- RequiredLossError  a required stream lost data
    |   +-- CalibrationError   a calibration contract was violated
    |   +-- DescriptorDriftError a stream's descriptor changed mid-stream
    +-- OutputError            the output transaction could not validate or commit
    +-- ContractError          the host broke the Core contract (wrong lease, bad envelope)
"""

from __future__ import annotations

from collections.abc import Sequence

from fastsim_contract.errors import CoreError
from fastsim_contract.run_errors import RunIssue
from fastsim_record.core.errors import ReasonedError

__all__ = [
    "CalibrationError",
    "ConfigError",
    "ContractError",
    "DescriptorDriftError",
    "OutputError",
    "RecordError",
    "RecordingFailed",
    "RequiredLossError",
    "translate",
]


class RecordError(ReasonedError):
    """Base of every error the plugin raises on purpose (``reason`` plus ``fields``)."""


class ConfigError(RecordError):
    """The authored Run or Record config is invalid; carries every issue found."""

    def __init__(self, issues: Sequence[RunIssue]) -> None:
        self.issues: tuple[RunIssue, ...] = tuple(issues)
        super().__init__("\n".join(str(i) for i in self.issues), issues=self.issues)


class RecordingFailed(RecordError):
    """A latched fatal recording error; the artifact must not be committed."""


class RequiredLossError(RecordingFailed):
    """A required stream lost data."""


class CalibrationError(RecordingFailed):
    """A camera's calibration contract was violated."""


class DescriptorDriftError(RecordingFailed):
    """A stream's shape, dtype or codec description changed mid-stream."""


class OutputError(RecordError):
    """The output transaction failed: validation, confirmation or commit."""


class ContractError(RecordError):
    """The host violated the Core contract (wrong lease identity, malformed envelope)."""


def translate(exc: BaseException, what: str) -> RecordError:
    """A Core (or unexpected) error met while doing ``what``, as one ``RecordError`` line."""
    if isinstance(exc, RecordError):
        return exc
    if isinstance(exc, CoreError):
        return ContractError(f"{what}: Core refused: {exc}", cause=type(exc).__name__)
    return ContractError(f"{what}: {type(exc).__name__}: {exc}", cause=type(exc).__name__)
