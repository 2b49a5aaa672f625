"""One signal against one threshold, as an :class:`Evidence` item, and the items of one stage."""

from __future__ import annotations

import math
import operator
import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache

from gpuwatch.diagnosis.thresholds import HYSTERESIS_ABS, HYSTERESIS_REL, MODERATE_MIN_SAMPLES, WAIT_MODERATE
from gpuwatch.model.verdict import Evidence

WORDS: ContextVar[bool] = ContextVar("evidence_words", default=True)
"""False while a decision is scored that nothing shows (the switch test's, decide.py): its checks
keep their results (fires, strength) but make no :class:`Evidence` items, whose text and
construction were most of a check's cost; only the verdict's own decision shows its items."""

REQ = "required"
SUP = "support"
INFO = "info"


def _rate(x: float) -> str:
    for unit, div in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.1f} {unit}"
    return f"{x:.0f} B/s"


UNITS = {
    "%": lambda x: f"{x * 100:.0f} %",
    "cores": lambda x: f"{x:.2f} core{'s' if x >= 1.005 else ''}",
    "B/s": _rate,
    "/s": lambda x: f"{x:.1f}/s",
    "x": lambda x: f"{x:.2f}",
    "threads": lambda x: f"{x:.2f} thread{'' if abs(x - 1) < 0.005 else 's'}",
}


def fmt(value: float | None, unit: str = "%") -> str:
    return "not measured" if value is None else UNITS.get(unit, lambda x: f"{x:.3g}")(value)


FINER = {
    "%": lambda x, d: f"{x * 100:.{d}f} %",
    "cores": lambda x, d: f"{x:.{d + 2}f} core{'s' if x >= 1.005 else ''}",
    "/s": lambda x, d: f"{x:.{d + 1}f}/s",
    "x": lambda x, d: f"{x:.{d + 2}f}",
    "threads": lambda x, d: f"{x:.{d + 2}f} thread{'' if abs(x - 1) < 0.005 else 's'}",
}
"""A reading in its unit with ``d`` more decimals than :data:`UNITS` gives it (units said as a plain number)."""
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def said(value: float, th: float, op: str, unit: str = "%") -> str:
    """``value`` as the evidence says it beside its cut ``th``: as :func:`fmt` says it, or with up to
    three more decimals where the rounded numbers would compare otherwise than the reading and the
    cut do ("1.96 % (needs under 2 %)", not "2 % (needs under 2 %)" for a cut that is met; "22.3 %"
    against a cut of "22.2 %", not "22 %" for one that is not)."""
    text = fmt(value, unit)
    finer, compare = FINER.get(unit), _OPS.get(op)
    if finer is None or compare is None:
        return text
    holds = compare(value, th)
    shown_cut = float(_NUMBER.search(cut(th, unit)).group())  # type: ignore[union-attr]
    for d in (1, 2, 3):
        if compare(float(_NUMBER.search(text).group()), shown_cut) == holds:  # type: ignore[union-attr]
            return text
        text = finer(value, d)
    return text  # a reading between the cut and the cut as said: the closest it can be said


def count(n: float, noun: str, plural: str | None = None) -> str:
    """``1 sample``, ``2 samples``, ``1 process``, ``3 processes`` (a whole number of things)."""
    k = round(n)
    return f"{k} {noun if k == 1 else plural or noun + 's'}"


def sets_of(sets: tuple[int, ...]) -> str:
    """Worker sets in words: ``2 sets (2 + 14)``, or ``13 sets of 2`` where all are alike."""
    if len(set(sets)) == 1:
        return f"{len(sets)} sets of {sets[0]}"
    return f"{len(sets)} sets ({' + '.join(str(x) for x in sets)})"


OP_WORDS = {">=": "at least", ">": "over", "<=": "at most", "<": "under"}
"""A comparison in words, as the evidence text says it."""


def cut(value: float, unit: str = "%") -> str:
    """A threshold in words: one decimal where a rounded percentage would hide the cut (3.75 % is
    "3.8 %", not "4 %", beside a reading of 4 % that does not reach it)."""
    if unit == "%" and abs(value * 100 - round(value * 100)) >= 0.05:
        return f"{value * 100:.1f} %"
    return fmt(value, unit)


@lru_cache(maxsize=4096)
def needs(threshold: float, op: str, unit: str = "%", base: float | None = None, relax: float = 0.0) -> str:
    """``needs at least 5 %``, with the eased or tightened cut where hysteresis moved it. Cached: a
    tick asks for a few hundred of these, nearly all the same documented cuts as the tick before."""
    words = OP_WORDS.get(op, op)
    text = f"needs {words} {cut(threshold if base is None else base, unit)}"
    if base is not None and cut(base, unit) != cut(threshold, unit):
        when = "while this stage holds the verdict" if relax > 0 else "to take the verdict over"
        # The comparison again: a bare "; 95 % while this stage holds" reads as a measured value.
        text += f"; {words} {cut(threshold, unit)} {when}"
    return text


def adjusted(threshold: float, op: str, relax: float, unit: str = "%") -> float:
    """The threshold moved by ``relax`` bands (> 0: easier to hold; < 0: harder), for hysteresis."""
    band = HYSTERESIS_REL * abs(threshold)
    if unit not in ("B/s", "/s"):
        band = min(HYSTERESIS_ABS, band)
    return threshold - relax * band if op in (">=", ">") else threshold + relax * band


def holds(value: float, threshold: float, op: str) -> bool:
    return _OPS[op](value, threshold)


_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
"""Each comparison as a function: looked up, not a dict of all four comparisons made per check."""


def _samples_cut(th: float, threshold: float, op: str, samples: int) -> str | None:
    """A share's cut that is MODERATE_MIN_SAMPLES samples' worth of the ``samples`` it is read over
    (thresholds.moderate_cut, high_cut), in samples: "needs under 200 %" (2 of 1) and "needs under
    66.7 %" (2 of 3) read as impossible or arbitrary percentages (review 30). None for any other cut."""
    if samples <= 0 or th != threshold or th <= WAIT_MODERATE or abs(th - MODERATE_MIN_SAMPLES / samples) > 1e-9:
        return None
    fewer = f"; only {count(samples, 'was', 'were')} taken" if samples < MODERATE_MIN_SAMPLES else ""
    return f"needs {OP_WORDS.get(op, op)} {MODERATE_MIN_SAMPLES}{fewer}"


def _item(stage: str, signal: str, value: float | None, th: float, op: str, what: str, unit: str,
          threshold: float, relax: float, na: str = "", samples: int = 0) -> Evidence:
    """The Evidence item of one check, made once for each set of its inputs and then handed out
    again: most of a verdict's sixty-odd items read as they did a tick before (the same value, or
    none), and their text and the frozen dataclass were most of the verdict decision's cost. An
    item depends on the key's inputs only (``supports`` is the comparison of value and th, the
    text says value, th and threshold); a zero's sign is in the key, as the text and the JSON
    write -0.0 and 0.0 apart. Emptied whole when it holds ITEMS_KEPT."""
    key = (stage, signal, value, value == 0 and math.copysign(1.0, value), th, op, what, unit, threshold, relax, na,
           samples)
    e = _ITEMS.get(key)
    if e is not None:
        return e
    if value is None:
        if na:
            e = Evidence(stage, signal, None, th, op, False, f"{what}: does not apply ({na})", what, unit,
                         applies=False)
        else:
            e = Evidence(stage, signal, None, th, op, False,
                         f"{what}: not measured ({needs(th, op, unit, threshold, relax)})", what, unit)
    else:
        by_samples = _samples_cut(th, threshold, op, samples)
        # counts beside a count: "13 of 14 samples (needs under 2)", not "93 % of 14 samples"
        shown = (f"{round(value * samples)} of {count(samples, 'sample')} ({by_samples})" if by_samples
                 else f"{said(value, th, op, unit)} ({needs(th, op, unit, threshold, relax)})")
        e = Evidence(stage, signal, float(value), th, op, _OPS[op](value, th), f"{what}: {shown}", what, unit)
    if len(_ITEMS) >= ITEMS_KEPT:
        _ITEMS.clear()
    _ITEMS[key] = e
    return e


ITEMS_KEPT = 4096
"""Items _item keeps: a tick asks for about sixty, of which a third or so are new (minutes of ticks)."""
_ITEMS: dict[tuple, Evidence] = {}


@dataclass(slots=True)
class Checks:
    """The evidence one stage scorer collects.

    ``required`` items are the stage's gates: their thresholds move with ``relax`` (the stability
    rule's hysteresis) and the scorer combines their results itself. ``support`` items say how
    sure the stage is (its strength). ``info`` items are shown only. An unknown value is kept as an
    item with value None, so the verdict shows what could not be read, and counts neither way.
    """

    stage: str
    relax: float = 0.0
    items: list[Evidence] = field(default_factory=list)
    support: list[bool] = field(default_factory=list)
    _signals: set[str] = field(default_factory=set, repr=False)
    """The signals checked so far: one row per signal, looked up without a scan of the items."""
    _words: bool = field(default_factory=WORDS.get, repr=False)
    """Whether the items are kept (evidence.WORDS, read once as the scorer starts)."""

    def check(self, signal: str, value: float | None, threshold: float, op: str, what: str,
              unit: str = "%", kind: str = SUP, band: float | None = None, na: str = "",
              samples: int = 0) -> bool | None:
        """Compare and record; True/False, or None when the value is unknown. Each threshold's
        basis is in docs/THRESHOLDS.md; the text says the cut in words with its number. ``band``: how
        far a required item of the stage in force may fall before it lets go, where that is wider
        than the usual band (a share's own noise); a challenger still meets the usual band. ``na``
        says why the signal does not apply to this job (then an unknown value is not "not measured").
        ``samples``: the stack samples a share is read over, said where its cut is their count's."""
        th = adjusted(threshold, op, self.relax, unit) if kind == REQ else threshold
        if kind == REQ and band is not None and self.relax > 0:  # the stage in force holds to its wider band
            th = threshold - self.relax * band if op in (">=", ">") else threshold + self.relax * band
            if unit == "%" and op == ">=":  # a band wider than the cut: any share holds, said as 0 %, not -12.7 %
                th = max(th, 0.0)
        words = self._words
        if value is None:
            if self._first(signal) and words:
                self.items.append(_item(self.stage, signal, None, th, op, what, unit, threshold,
                                        self.relax if kind == REQ else 0.0, na))
            return None
        ok = _OPS[op](value, th)
        if self._first(signal):
            if words:
                self.items.append(_item(self.stage, signal, value, th, op, what, unit, threshold,
                                        self.relax if kind == REQ else 0.0, samples=samples))
            if kind == SUP:
                self.support.append(ok)
        return ok

    def note(self, signal: str, text: str, supports: bool, value: float | None = None,
             kind: str = SUP, applies: bool = True) -> None:
        """A fact without a threshold (e.g. "pin_memory is on"). ``applies`` False: the fact is that
        the stage cannot be judged here ("no GPU to judge"), a "does not apply" item, not a cut unmet."""
        if self._first(signal):
            if self._words:
                self.items.append(Evidence(self.stage, signal, value, None, "", supports, text, text, "",
                                           applies=applies))
            if kind == SUP:
                self.support.append(supports)

    @property
    def words(self) -> bool:
        """Whether this decision's words are kept (evidence.WORDS, read as the scorer started)."""
        return self._words

    def _first(self, signal: str) -> bool:
        """Whether ``signal`` is new to this stage (one row per signal and stage); marks it seen."""
        if signal in self._signals:
            return False
        self._signals.add(signal)
        return True

    @property
    def strength(self) -> float:
        """Share of the known supporting items that hold (0.5 when none could be asked)."""
        return sum(self.support) / len(self.support) if self.support else 0.5


MET, NOT_MET, NOT_MEASURED, NOT_APPLICABLE = "met", "not met", "not measured", "does not apply"
EVIDENCE_MARKS = {MET: "●", NOT_MET: "○", NOT_MEASURED: "?", NOT_APPLICABLE: "–"}
"""One mark per evidence status, the same in the TUI and the report, and unlike the pipeline's
stage levels (✓ ok, ▲ warning, ■ bottleneck): a met cut is not an "ok" stage."""


FACT_MARKS = "a reading with no threshold: ● where it points to the stage, ○ where it points away"
"""The legend's word on notes (Checks.note): "○ no storage sign" reads as a sign seen without it
(trial 29)."""


def status(e: Evidence) -> str:
    """Met, not met, not measured or does not apply. A fact without a cut (a note) is met when it
    points towards the stage."""
    if not e.applies:
        return NOT_APPLICABLE
    if e.value is None and e.threshold is not None:
        return NOT_MEASURED
    return MET if e.supports else NOT_MET


def mark(e: Evidence) -> str:
    """``● main thread waiting for a batch: 62 % (needs at least 20 %)``."""
    return f"{EVIDENCE_MARKS[status(e)]} {e.text}"


def yes(x: bool | None) -> bool:
    return x is True
