"""Stop signals raised where Python cannot raise (gpuwatch/stopping.py)."""

from __future__ import annotations

import signal
import time

import pytest

from gpuwatch import stopping


class _RaisesOnDelete:
    """Stands for importlib's module-lock weakref callback: a stop signal's Stopped lands inside a
    callback whose exception Python swallows and prints as "Exception ignored"."""

    def __del__(self) -> None:
        raise stopping.Stopped(signal.SIGTERM)


def test_a_stop_swallowed_in_a_callback_is_raised_again_in_the_main_flow(capsys):
    with pytest.raises(stopping.Stopped) as caught:
        with stopping.raising_stop():
            stopping._stopping.append(signal.SIGTERM)  # as the handler leaves it before raising
            obj = _RaisesOnDelete()
            del obj  # the Stopped goes to sys.unraisablehook
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # the re-sent signal raises at a next instruction
                time.sleep(0.01)
    assert caught.value.signum == signal.SIGTERM
    assert "Exception ignored" not in capsys.readouterr().err


def test_other_unraisable_exceptions_still_reach_the_previous_hook():
    seen = []
    before = stopping.sys.unraisablehook
    stopping.sys.unraisablehook = seen.append
    try:
        with stopping.raising_stop():
            class Bad:
                def __del__(self) -> None:
                    raise ValueError("x")
            b = Bad()
            del b
    finally:
        stopping.sys.unraisablehook = before
    assert [type(a.exc_value) for a in seen] == [ValueError]
