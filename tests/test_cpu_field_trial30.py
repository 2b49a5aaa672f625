"""Trial 30's CPU jobs (tests/data/cpu_field/README.md): a cause said without its evidence, or a
figure claimed where what paces the job went unsaid."""

from __future__ import annotations

import re

from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown

def test_contention_beside_a_main_thread_blocked_in_its_own_print_says_so():
    """tests/data/cpu_field/print_pipe.jsonl.gz: a job blocked in print() into a slow pipe about half
    its time kept the shipper's 12.5 steps/s whatever the outside load, and the report said only
    "Contention ... about 1.82x" with no word of the print. The blocked time is said beside it, with
    where, and that freeing CPUs gains little if it sets the pace."""
    path = "tests/data/cpu_field/print_pipe.jsonl.gz"
    md = render_markdown(build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path))
    text = md.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert text.lstrip().startswith("**Contention**"), text
    said = re.search(r"The main thread is also blocked in the job's own code (\d+) % of the time, (\d+) of its "
                     r"last (\d+) samples, most often in main \(slowlog\.py:29\)\. The speed-up counts that time "
                     r"as fixed: if it sets the pace \(a full output pipe, a lock, a rate limit\), freeing CPUs "
                     r"gains less\.", text)
    assert said and int(said[1]) >= 20 and int(said[2]) >= 3, text


def test_no_remedy_names_a_hot_function_from_a_tie():
    """tests/data/cpu_field/json_stream.jsonl.gz, tick 24: "the workers are most often in
    JSONDecoder.raw_decode" stood on one sample of a 1-1-1 tie, while the float-parsing list
    comprehension had four in the minute and led the report's own worker stacks."""
    verdicts = from_frames(load_frames("tests/data/cpu_field/json_stream.jsonl.gz")).verdicts
    said = [" ".join(v.remedies) + v.sentence for v in verdicts]
    assert not any("most often in JSONDecoder.raw_decode" in x for x in said)
    assert any("most often in Stream.records.<locals>.<listcomp>" in x for x in said)


def test_a_real_lightning_jobs_validation_waits_are_flagged_beyond_the_kept_frames():
    """tests/data/cpu_field/lightning_val_flagged.jsonl.gz: its training loader waited 2.1 % of the
    time by its own clock, its validation (loader waits included) 31.4 %. Lightning's evaluation loop
    lies beyond the twelve frames a sample keeps under a DataLoader wait: the collector's flag, read
    from the whole stack, puts most waits inside a pass where the kept frames name one in only one."""
    from gpuwatch.model import stacks as lb
    from gpuwatch.model.evaluation import validation_frame

    frames = load_frames("tests/data/cpu_field/lightning_val_flagged.jsonl.gz")
    seen, waits = set(), []
    for f in frames:
        if hasattr(f.stacks, "threads") and f.stacks.t not in seen:
            seen.add(f.stacks.t)
            waits += [t for t in f.stacks.threads
                      if t.role == lb.ROLE_MAIN_THREAD and t.label in (lb.DATA_WAIT, lb.DATA_IPC)]
    flagged = [t for t in waits if t.evaluating]
    assert len(flagged) * 2 > len(waits) >= 10, (len(flagged), len(waits))
    assert sum(any(validation_frame(x) for x in t.frames) for t in flagged) <= 1
    said = [v.sentence for v in from_frames(frames).verdicts]
    assert any("Most of these waits are the validation loader's" in x for x in said)
