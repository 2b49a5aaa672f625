"""Two runs' figures side by side: one row per measure, with the change and whether it is for the
better, plus notes where the two runs are not like for like (other GPUs, another command)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from gpuwatch.collectors.target import _is_launcher_cmd
from gpuwatch.diagnosis.thresholds import COMPARE_SAME_POINTS, COMPARE_SAME_SHARE
from gpuwatch.model.verdict import GPU_BOUND, PIPELINE, STAGE_TITLES
from gpuwatch.report.figures import HIGHER, LOWER, MEASURES, NEUTRAL, Figures, Mean


@dataclass(frozen=True, slots=True)
class Row:
    group: str
    """"stage time", "GPU", "input", "PCIe", "host", "stalls", "speed-up left"."""
    key: str
    """Stable id for tools (e.g. "gpu_busy", "stage.io")."""
    label: str
    unit: str
    """"%" (0-100), "x", "B/s", "% of a core", "s" or "workers" (a count)."""
    before: float | None
    after: float | None
    better: int
    """HIGHER, LOWER or NEUTRAL."""
    note: str = ""
    ceiling: tuple[bool, bool] = (False, False)
    """Whether the value before / after is a ceiling ("at most"), not an estimate."""
    absent: tuple[bool, bool] = (False, False)
    """Whether a missing value before / after was measured as absent (a stall period where the run
    had no stall), said "none seen", not "not measured"."""

    @property
    def change(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before

    @property
    def verdict(self) -> str:
        """"better", "worse", "same", "changed" (a neutral measure) or "not comparable"."""
        d = self.change
        if d is None:
            return "not comparable"
        big = max(abs(self.before), abs(self.after))  # type: ignore[arg-type]
        tol = COMPARE_SAME_POINTS if self.unit == "%" else COMPARE_SAME_SHARE * big
        if abs(d) <= tol:
            return "same"
        if self.better == NEUTRAL:
            return "changed"
        return "better" if (d > 0) == (self.better == HIGHER) else "worse"


@dataclass(frozen=True, slots=True)
class Comparison:
    before: Figures
    after: Figures
    before_path: str
    after_path: str
    rows: tuple[Row, ...]
    notes: tuple[str, ...]
    """Where the two runs differ in kind, and measures one side could not read."""


def compare(before: Figures, after: Figures, before_path: str = "BEFORE", after_path: str = "AFTER",
            bad_lines: tuple[int, int] = (0, 0)) -> Comparison:
    """``bad_lines``: unreadable lines skipped in each recording (said in the notes)."""
    rows = _stage_rows(before, after) + _measure_rows(before, after) + _stall_rows(before, after)
    rows += (_speedup_row(before, after),)
    skipped = tuple(f"{n} unreadable line{'s were' if n != 1 else ' was'} skipped in the recording {side}."
                    for side, n in zip(("before", "after"), bad_lines) if n)
    return Comparison(before, after, before_path, after_path, rows, skipped + _notes(before, after, rows))


def _stage_rows(b: Figures, a: Figures) -> tuple[Row, ...]:
    sb, sa = dict(b.stage_shares), dict(a.stage_shares)
    order = [s for s, _ in b.stage_shares] + [s for s, _ in a.stage_shares if s not in sb]
    return tuple(Row("stage time", f"stage.{s}", STAGE_TITLES.get(s, s), "%", 100.0 * sb.get(s, 0.0),
                     100.0 * sa.get(s, 0.0), _stage_better(s)) for s in order)


def _stage_better(stage: str) -> int:
    """Less time held back by a pipeline stage is better, more time GPU-bound is better; idle and
    unknown time are neither."""
    return LOWER if stage in PIPELINE else HIGHER if stage == GPU_BOUND else NEUTRAL


def _measure_rows(b: Figures, a: Figures) -> tuple[Row, ...]:
    out = []
    for group, key, label, unit, better in MEASURES:
        mb, ma = getattr(b, key), getattr(a, key)
        out.append(Row(group, key, label, unit, mb.value, ma.value, better, _missing(mb, ma)))
    return tuple(out)


def _stall_rows(b: Figures, a: Figures) -> tuple[Row, ...]:
    pct = lambda f: None if f.stall_measured is None else 100.0 * f.stall_measured  # noqa: E731
    share = Row("stalls", "stall_share", "time with a periodic GPU stall", "%", pct(b), pct(a), LOWER,
                _missing(Mean(pct(b), 0), Mean(pct(a), 0)))
    if b.stall_period_s is None and a.stall_period_s is None:
        return (share,)
    # A run whose stall share was measured at 0 had no stall to time: its period is "none seen", not
    # "not measured" (review 28: "1.4 s -> not measured" beside "33.3 % -> 0.0 %").
    none = tuple(f.stall_period_s is None and f.stall_measured == 0.0 for f in (b, a))
    return share, Row("stalls", "stall_period_s", "stall period (median)", "s", b.stall_period_s, a.stall_period_s,
                      NEUTRAL, "" if None not in (b.stall_period_s, a.stall_period_s) else "seen in one run only",
                      absent=none)  # type: ignore[arg-type]


def _speedup_row(b: Figures, a: Figures) -> Row:
    """The whole-run speed-up still on the table: 1.0 (nothing left) where no remedy came with an
    estimate and the run was mostly GPU-bound. Where a side holds only a ceiling (a stage nobody
    estimated), the change is shown but not judged better or worse."""
    def left(f: Figures) -> tuple[float | None, str, bool]:
        if f.speedup_left is not None:
            sl = f.speedup_left
            title = STAGE_TITLES.get(sl.stage, sl.stage)
            if sl.factor is None:
                return None, f"{title} not estimated", False
            if sl.upper_bound:
                return sl.factor, f"{title}, not estimated: at most {sl.factor:.2f}x if its time went to zero", True
            return sl.factor, f"{title}, {sl.factor:.2f}x or more" if sl.floor else title, False
        top = f.stage_shares[0][0] if f.stage_shares else None
        return (1.0, "nothing to fix", False) if top == GPU_BOUND else (None, "not estimated", False)

    vb, wb, bound_b = left(b)
    va, wa, bound_a = left(a)
    return Row("speed-up left", "speedup_left", "estimated speed-up left", "x", vb, va,
               NEUTRAL if bound_b or bound_a else LOWER, f"before: {wb}; after: {wa}", (bound_b, bound_a))


def _missing(mb: Mean, ma: Mean) -> str:
    if mb.value is None and ma.value is None:
        return "not measured in either run"
    if mb.value is None:
        return "not measured before"
    if ma.value is None:
        return "not measured after"
    return ""


def _notes(b: Figures, a: Figures, rows: tuple[Row, ...]) -> tuple[str, ...]:
    notes = []
    if b.gpus != a.gpus:
        notes.append(f"The runs used different GPUs (before: {_gpus(b)}; after: {_gpus(a)}): GPU and PCIe "
                     "figures compare different hardware.")
    if b.cmdline and a.cmdline and b.cmdline != a.cmdline:
        notes.append(command_note(b.cmdline, a.cmdline))
    for r in rows:
        if (r.group in ("GPU", "input", "PCIe", "host") or r.key == "stall_share") and r.note:
            notes.append(f"{r.label}: {r.note}.")
    return tuple(notes)


def command_note(before: str, after: str) -> str:
    """How two command lines differ: the same program with other arguments (the usual shape of a
    fix: ``--workers 12``), or another program (then they may be different jobs)."""
    tb, ta = before.split(), after.split()
    pb, pa = _program(tb), _program(ta)
    if pb != pa and (same := _launcher_and_rank(tb, ta)):
        return same
    if pb != pa:
        return (f"The runs are different programs, so they may be different jobs (before: {_short(' '.join(pb))}; "
                f"after: {_short(' '.join(pa))}).")
    gone, new = _only(tb[len(pb):], ta[len(pa):]), _only(ta[len(pa):], tb[len(pb):])
    said = [f"before had {_short(' '.join(gone))}" if gone else "", f"after has {_short(' '.join(new))}" if new else ""]
    if not gone and not new and tb[len(pb):] == ta[len(pa):]:
        # the script's path written two ways (./train.py, train.py): the only difference
        return (f"The runs are the same program, its script's path written differently (before: "
                f"{_short(' '.join(tb[:len(pb)]))}; after: {_short(' '.join(ta[:len(pa)]))}).")
    if not gone and not new:
        return f"The runs are the same program with its arguments in another order ({_short(after)})."
    return f"The runs are the same program with other arguments: {'; '.join(x for x in said if x)}."


def _launcher_and_rank(tb: list[str], ta: list[str]) -> str:
    """The note for one script run once under its launcher and once without it, or the same job
    watched once by its launcher's PID and once by a rank's (nvidia-smi lists the ranks; either PID
    watches the whole job): the launcher's command (``torchrun ... train.py``) holds the script the
    other runs (``python -u train.py``: its first ``.py`` word; the launcher's options may name other
    ``.py`` files). Empty where that is not the case."""
    launcher = [_is_launcher_cmd(tuple(t)) for t in (tb, ta)]
    if launcher[0] == launcher[1]:
        return ""
    under, alone = (tb, ta) if launcher[0] else (ta, tb)
    mine = next((i for i, t in enumerate(alone) if t.endswith(".py")), None)
    if mine is None:
        return ""
    theirs = next((i for i, t in enumerate(under) if t.endswith(".py") and _same_path(t, alone[mine])), None)
    if theirs is None:
        return ""
    args_under, args_alone = _own_args(under[theirs + 1:]), _own_args(alone[mine + 1:])
    args_b, args_a = (args_under, args_alone) if launcher[0] else (args_alone, args_under)
    own = "as its own process (one rank's, or a run without the launcher)"
    which = f"before under its launcher, after {own}" if launcher[0] else f"before {own}, after under its launcher"
    gone, new = _only(args_b, args_a), _only(args_a, args_b)
    said = "; ".join(x for x in (f"before had {_short(' '.join(gone))}" if gone else "",
                                 f"after has {_short(' '.join(new))}" if new else "") if x)
    return (f"The runs are the same script ({_short(alone[mine])}): {which}"
            + (f", with other arguments: {said}." if said else "."))


def _same_path(a: str, b: str) -> bool:
    """One script: the same path once normalised, or the same file name where one side gives no
    folder (typed from the script's own folder)."""
    na, nb = os.path.normpath(a), os.path.normpath(b)
    if na == nb:
        return True
    return os.path.basename(na) == os.path.basename(nb) and (os.sep not in na or os.sep not in nb)


def _own_args(tokens: list[str]) -> list[str]:
    """The script's arguments less the local rank a launcher adds to each rank's (deepspeed,
    torch.distributed.launch): ``--local_rank=N`` or ``--local_rank N``."""
    out: list[str] = []
    skip = False
    for t, nxt in zip(tokens, [*tokens[1:], ""]):
        if skip:
            skip = False
            continue
        if LOCAL_RANK.fullmatch(t):
            continue
        if LOCAL_RANK_FLAG.fullmatch(t) and nxt.isdigit():
            skip = True
            continue
        out.append(t)
    return out


LOCAL_RANK = re.compile(r"--local[-_]rank=\d+")
LOCAL_RANK_FLAG = re.compile(r"--local[-_]rank")


def _program(tokens: list[str]) -> list[str]:
    """The words before the first ``--option``: the interpreter and script, or ``python -m module``;
    a script's path normalised (``./train.py`` is ``train.py``)."""
    for i, t in enumerate(tokens):
        if t.startswith("--"):
            tokens = tokens[:i]
            break
    # the script alone (the first .py word): a later one may be an option's file (-c ./cfg.py)
    first = next((i for i, t in enumerate(tokens) if t.endswith(".py")), None)
    return [os.path.normpath(t) if i == first else t for i, t in enumerate(tokens)]


def _only(xs: list[str], ys: list[str]) -> list[str]:
    """The words of ``xs`` that ``ys`` does not have (as many times as it lacks them), in order."""
    rest = list(ys)
    out = []
    for x in xs:
        if x in rest:
            rest.remove(x)
        else:
            out.append(x)
    return out


def _gpus(f: Figures) -> str:
    if not f.gpus:
        return "none readable"
    names = sorted(set(f.gpus))
    return ", ".join(f"{f.gpus.count(n)} x {n}" if f.gpus.count(n) > 1 else n for n in names)


def _short(s: str, n: int = 80) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."
