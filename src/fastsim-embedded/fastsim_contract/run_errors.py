"""Errors of the Run document and its compiler (Core's side of compilation).

``fastsim_contract`` stands alone, so it has its own error type rather than the
plugin's ``ConfigError``: a component catalog translates its own errors into
``RunConfigError`` at the boundary.  :class:`RunIssue` is the one issue type of the
whole stack: the contract is the lower layer, so the plugin's ``ConfigError`` carries
``RunIssue`` values too.  Every issue renders as one line, ``path: message``, with the
full dotted path from the Run root.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

__all__ = ["RunConfigError", "RunIssue"]


@attrs.frozen
class RunIssue:
    """One authored-Run or component-config problem: a dotted path from the Run root
    (``plugins.record.config.queues.media``) and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class RunConfigError(Exception):
    """The authored Run is invalid; carries every issue found, one line each."""

    def __init__(self, issues: Iterable[RunIssue]) -> None:
        self.issues: tuple[RunIssue, ...] = tuple(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))

    def __str__(self) -> str:
        return "\n".join(str(issue) for issue in self.issues)
