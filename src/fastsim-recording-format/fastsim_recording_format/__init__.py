"""FSR binary 1.2: the recording container, its validator, recovery and output transaction.

Self-contained: the container imports only the standard library, numpy, attrs and
crc32c.  The byte layout is specified in ``docs/fsr-format.md``.  The payload codecs are
``fastsim_recording_format.codecs`` (one module per payload; every refusal is a
:class:`PayloadError`) and the reading API is ``fastsim_recording_format.reading``.
"""

from fastsim_recording_format.errors import (
    FormatError,
    IntegrityPolicyError,
    PayloadError,
    ProfileUnsupportedError,
)
from fastsim_recording_format.model import (
    INTEGRITY_PROFILES,
    MODES,
    Record,
    RecordIn,
    RecordKind,
    RunMetadata,
    SealResult,
    StreamSpec,
)
from fastsim_recording_format.reader import FsrReader
from fastsim_recording_format.recover import RecoveryReport, recover
from fastsim_recording_format.transaction import (
    FilesystemLeases,
    LeaseError,
    OutputLeases,
    ReadbackLease,
    WriteLease,
    finish_output,
)
from fastsim_recording_format.validate import (
    POLICY_INTEGRITIES,
    RECEIPT_SCHEMA,
    VALIDATION_PROFILES,
    ValidationReceipt,
    supported_profiles,
    validate,
)
from fastsim_recording_format.writer import FsrWriter

__all__ = [
    "FormatError",
    "IntegrityPolicyError",
    "PayloadError",
    "ProfileUnsupportedError",
    "VALIDATION_PROFILES",
    "supported_profiles",
    "INTEGRITY_PROFILES",
    "MODES",
    "POLICY_INTEGRITIES",
    "RECEIPT_SCHEMA",
    "RecordKind",
    "StreamSpec",
    "RunMetadata",
    "RecordIn",
    "Record",
    "SealResult",
    "FsrWriter",
    "FsrReader",
    "ValidationReceipt",
    "validate",
    "RecoveryReport",
    "recover",
    "OutputLeases",
    "WriteLease",
    "ReadbackLease",
    "LeaseError",
    "FilesystemLeases",
    "finish_output",
]
