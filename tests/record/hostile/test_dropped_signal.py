"""A stop signal that Python drops in a callback that cannot raise is raised again (row 6 of ``cli/_signals``)."""

from __future__ import annotations

import signal
import sys
import weakref
from typing import Any

import pytest

from fastsim_record.cli import _signals


class _Object:
    """Something a weak reference can watch."""


@pytest.fixture
def state(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A fresh signal state; the "Exception ignored" reports are collected instead of printed."""
    monkeypatch.setattr(_signals, "_state", _signals._State())
    dropped: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)
    return dropped


def _drop_sigint_in_a_weakref_callback() -> None:
    obj = _Object()
    ref = weakref.ref(obj, lambda _: _signals._handler(signal.SIGINT, None))
    del obj  # the callback runs now; Python reports its exception as ignored and goes on
    assert ref() is None


def test_a_signal_dropped_in_a_weakref_callback_is_raised_by_check(state: list[Any]) -> None:
    """The import machinery's weakref callback swallowed Interrupted: check() raises it, once handled it is gone."""
    _drop_sigint_in_a_weakref_callback()
    assert [type(u.exc_value) for u in state] == [_signals.Interrupted]
    with pytest.raises(_signals.Interrupted) as caught:
        _signals.check()
    assert caught.value.exit_code == 130
    caught.value.handled()
    _signals.check()  # nothing left to raise


def test_check_raises_nothing_after_the_outcome_is_settled(state: list[Any]) -> None:
    """After settle() (OUT published) a dropped signal is not raised: exit 128 + N means nothing was published."""
    _drop_sigint_in_a_weakref_callback()
    _signals.settle()
    _signals.check()


def test_a_signal_that_reached_its_handler_is_not_raised_again(state: list[Any]) -> None:
    """An Interrupted that propagated and was handled leaves check() quiet."""
    with pytest.raises(_signals.Interrupted) as caught:
        _signals._handler(signal.SIGTERM, None)
    caught.value.handled()
    _signals.check()


def test_install_keeps_a_dropped_signals_report_quiet_and_passes_other_reports_on(
    state: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After install() a signal dropped in a weakref callback prints no "Exception ignored" traceback; other reports still reach the old hook."""
    monkeypatch.setattr(signal, "signal", lambda *_: None)  # leave the test runner's own handlers alone
    _signals.install()
    _drop_sigint_in_a_weakref_callback()
    assert state == []  # not reported: row 6 remembers it instead
    obj = _Object()
    ref = weakref.ref(obj, lambda _: 1 / 0)
    del obj
    assert ref() is None
    assert [type(u.exc_value) for u in state] == [ZeroDivisionError]
    with pytest.raises(_signals.Interrupted):
        _signals.check()
