"""The report's headline says when its sentence's readings were taken, and the remedies say whose
readings they quote: both are one tick's, where the evidence section gives medians.

tests/data/cpu_field/image_workers.jsonl.gz (a CPU image job beside an outside load): its headline
read "processes outside the job use 1.00 core of 2 CPUs" above an evidence median of 43 %, with
nothing to say which reading was which.
"""

from __future__ import annotations

from gpuwatch.model.verdict import times

import html
import json

from gpuwatch.diagnosis.sentence import HELD
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_html import render_html
from gpuwatch.report.render_json import render_json
from gpuwatch.report.render_md import render_markdown
from gpuwatch.report.words import REMEDIES_READ_AT

RECORDING = "tests/data/cpu_field/image_workers.jsonl.gz"


def _report(frames):
    return build_report(from_frames(frames), NOT_RECORDED, "replay", path=RECORDING)


def test_the_headline_says_the_second_its_readings_are_from():
    frames = load_frames(RECORDING)
    got = from_frames(frames)
    r = _report(frames)
    # the tick the sentence is from: the stage's latest verdict whose readings held it on full thresholds
    said = [v for v in got.verdicts if v.stage == r.summary.stage and v.sentence and HELD not in v.sentence][-1]
    at = said.t - got.verdicts[0].t
    assert r.summary.sentence_at_s == round(at, 1)
    md = render_markdown(r)
    verdict = md.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert said.sentence.split(":")[0] in verdict  # the sentence quoted is that stage's
    assert f"(These readings are from {at:.0f} s into the run; the evidence section gives each signal's " \
           "middle reading over the ticks the stage held.)" in verdict, verdict
    assert "the middle reading is shown" in md  # which the evidence section does say
    assert json.loads(render_json(r))["summary"]["sentence_at_s"] == round(at, 1)


def test_the_remedies_say_they_quote_one_ticks_readings():
    r = _report(load_frames(RECORDING))
    md = render_markdown(r)
    remedies = md.split("## Remedies", 1)[1].split("\n## ", 1)[0]
    assert remedies.split("\n")[2] == REMEDIES_READ_AT
    page = render_html(r, ())
    assert html.escape(REMEDIES_READ_AT) in page or REMEDIES_READ_AT in page


def test_no_readings_note_where_the_sentence_holds_none():
    # two ticks: not yet judged, "1 stack sample of the main thread so far, 3 needed" is a count, no reading
    r = _report(load_frames(RECORDING)[:2])
    assert r.summary.stage == "unknown" and any(c.isdigit() for c in r.summary.sentence)
    md = render_markdown(r)
    assert "These readings are from" not in md
    assert not r.remedies and REMEDIES_READ_AT not in md
    # Idle's sentence names where the job sleeps, "in upload (j6_pause.py:14)": a line number, no reading
    idle = _report(load_frames("tests/data/cpu_field/upload_pause.jsonl.gz"))
    assert idle.summary.stage == "idle" and "j6_pause.py:14" in idle.summary.sentence
    assert "These readings are from" not in render_markdown(idle)


def test_the_evidence_median_in_json_is_the_reading_its_words_show():
    # tests/data/h200/field_checkpoint.jsonl.gz: GPU kernel-active read "51 %" in the words beside a
    # JSON value_median of 0.553 (the mean of the two middle readings of 26 ticks)
    path = "tests/data/h200/field_checkpoint.jsonl.gz"
    got = from_frames(load_frames(path))
    r = build_report(got, NOT_RECORDED, "replay", path=path)
    even = 0
    for line in r.evidence:
        if line.latest or line.value_median is None:
            continue
        values = sorted(e.value for v in got.verdicts if v.stage == line.stage
                        for e in v.evidence if e.stage == v.stage and e.signal == line.signal and e.value is not None)
        assert line.value_median == values[(len(values) - 1) // 2], line
        even += len(values) % 2 == 0 and values[len(values) // 2 - 1] != values[len(values) // 2]
    assert even  # the recording has lines whose two middle readings differ: the case this is about
    busy = next(x for x in json.loads(render_json(r))["evidence"] if x["signal"] == "gpu_active" and x["stage"] == "io")
    assert f"{busy['value_median']:.0%}".rstrip("%") in busy["text"]


def test_a_fix_above_the_stages_ceiling_over_the_run_says_its_tick():
    # tests/data/h200/field_tokenize.jsonl.gz: the stage's ceiling over the run (the verdicts' median)
    # read "2.80x while it holds", and its best fix, quoted from the latest tick, "about 4.67x while the
    # stage holds" with nothing to say the two were read over different spans
    path = "tests/data/h200/field_tokenize.jsonl.gz"
    got = from_frames(load_frames(path))
    r = build_report(got, NOT_RECORDED, "replay", path=path)
    m = r.summary
    assert m.best_fix is not None and m.speedup_while is not None and m.best_fix.factor > m.speedup_while
    assert m.fix_above_ceiling
    quoted = [v for v in got.verdicts if v.stage == m.stage and v.remedies][-1]
    assert m.best_fix_at_s == round(quoted.t - got.verdicts[0].t, 1)
    verdict = render_markdown(r).split("## Verdict", 1)[1].split("\n## ", 1)[0]
    # one figure claimed (the run's ceiling), the tick's said as a reading (review 32: the two read
    # as two claims for one fix)
    assert (f"is expected to gain most: up to {m.speedup_while:.2f}x while the stage holds, the stage's own "
            f"ceiling over the whole run, which bounds any fix (its latest tick, {m.best_fix_at_s:.0f} s into "
            f"the run, read {times(m.best_fix.factor)}x for it;") in verdict, verdict
    assert f"about {times(m.best_fix.factor)}x" not in verdict
    stage = next(x for x in r.remedies if x.stage == m.stage)
    assert stage.latest_while == quoted.speedup and quoted.speedup >= m.best_fix.factor
    assert (f"(counted on the ticks it held; up to {m.speedup_while:.2f}x while it holds, the middle of its ticks' figures; up to "
            f"{quoted.speedup:.2f}x at the latest tick, whose "
            "readings the remedies below quote)") in render_markdown(r)


def test_a_fix_within_the_stages_ceiling_whose_bound_is_above_it_says_the_tick():
    r = _report(load_frames("tests/data/h200/run25_lightning.jsonl.gz"))
    m = r.summary
    assert m.best_fix is not None and m.best_fix.factor <= m.speedup_while and not m.fix_above_ceiling
    md = render_markdown(r)
    assert "for it; each fix's own figure, from that tick's" not in md
    # but its bound ("up to about 1.49x") is above the stage's 1.40x: the stage's line says the latest
    # tick's ceiling the remedies quote, as for a figure above it (review 48)
    assert m.best_fix.upper is not None and m.best_fix.upper > m.speedup_while + 0.05
    assert "at the latest tick, whose readings the remedies below quote" in md
    assert all(x.latest_while is not None for x in r.remedies if x.stage == m.stage)


def test_the_epoch_section_of_a_run_shorter_than_a_minute_says_the_whole_run():
    # tests/data/h200/run25_imagefolder_epochs.jsonl.gz is 28 s: "Over the last minute of the run"
    # led its counts (review 29)
    path = "tests/data/h200/run25_imagefolder_epochs.jsonl.gz"
    r = build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path)
    assert r.epochs and r.source.covered_s < 60
    section = render_markdown(r).split("## Epoch structure", 1)[1].split("\n## ", 1)[0].strip()
    assert section.startswith(f"Over the whole run ({r.source.covered_s:.0f} s): the DataLoader workers are re-created")


def test_no_best_fix_no_second_for_it():
    # bench/results/2026-12-05-cpu-field/respawn_workers.jsonl.gz: Contention, no fix figure; its JSON
    # said "best_fix": null beside "best_fix_at_s": 70.0 (review 29)
    path = "bench/results/2026-12-05-cpu-field/respawn_workers.jsonl.gz"
    r = build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path)
    summary = json.loads(render_json(r))["summary"]
    assert summary["best_fix"] is None and summary["best_fix_at_s"] is None
    assert summary["fix_above_ceiling"] is False
