"""The "not supported" value: a reason instead of a made-up zero or an exception."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar, Union

from gpuwatch.model.field_words import words
from gpuwatch.untrusted import clean, is_clean

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A value that could not be read, with the reason (and, where known, the fix)."""

    reason: str

    def __post_init__(self) -> None:
        # Reasons quote errors, and an error can quote the job (a path, a name, py-spy's stderr):
        # cleaned like every string from the job (gpuwatch/untrusted.py).
        if not is_clean(self.reason):
            object.__setattr__(self, "reason", clean(self.reason))

    def __str__(self) -> str:
        return "N/A"


Maybe = Union[T, Unsupported]
"""A field that holds either a value or an :class:`Unsupported` with its reason."""

JOB_EXITED = "the job exited"
"""Begins the reason of a read that found the job gone: the end of the run, not a failure."""

_PROCESS_EXITED = re.compile(r"process (\d+) exited(?: \((.+)\))?")
"""How collectors/target.py words the job's end: "process N exited", maybe with why in brackets."""
_PSUTIL_GONE = re.compile(r"process no longer exists \(pid=(\d+)(?:, name=.*)?\)")
"""psutil's words for it (NoSuchProcess), which older recordings carry: "the job exited (process no
longer exists (pid=1733))" stood on screen (review 46)."""


def job_exited(reason: str | None) -> str:
    """"the job exited" with what is known of the end, saying "exited" once: the target's reason
    "process N exited" reads "the job exited (process N)" (not "the job exited (process N
    exited)"); another reason (psutil's words in older recordings) goes in brackets as it is."""
    if not reason or reason.startswith(JOB_EXITED):
        return reason or JOB_EXITED
    m = _PROCESS_EXITED.fullmatch(reason)
    gone = _PSUTIL_GONE.fullmatch(reason)
    detail = (f"process {m[1]}" + (f"; {m[2]}" if m[2] else "")) if m else f"process {gone[1]}" if gone else reason
    return f"{JOB_EXITED} ({detail})"

_OLDER_EXIT = re.compile(r"(\w+): TargetGone: (.+)")
"""How recordings made before the collectors said the job's end in words carry it: the field's key
and the exception's name ("procs: TargetGone: process 1289 exited"; tests/data/h200 run25, field)."""


_OLDER_CODE = (("(`--gpus all`)", "(--gpus all)"), ("check `nvidia-smi -L`", "check nvidia-smi -L"),
               ("a live `gpuwatch diagnose --pid PID`", "a live gpuwatch diagnose --pid PID"))
"""gpuwatch's own reasons as older builds wrote them, with backticks the Markdown report escaped into
"\\`--gpus all\\`" (review 36), and as they read today."""


def older_reason(reason: str) -> str:
    """An older recording's reason in the words a collector writes today: its job-exit reason reads
    "the job's processes: the job exited (process 1289)", its own commands no backticks; any other
    reason as it is."""
    if "`" in reason:
        for old, new in _OLDER_CODE:
            reason = reason.replace(old, new)
    if "TargetGone" not in reason:
        return reason
    m = _OLDER_EXIT.fullmatch(reason)
    return f"{words(m[1])}: {job_exited(m[2])}" if m else reason


PENDING = Unsupported("no sample yet")
"""Placeholder for a collector that has not produced its first sample."""


def known(value: object) -> bool:
    """True when ``value`` is a real reading (not Unsupported and not None)."""
    return value is not None and not isinstance(value, Unsupported)


def value_or(value: object, default: T) -> T:
    """The reading, or ``default`` when it is Unsupported or None."""
    return default if not known(value) else value  # type: ignore[return-value]
