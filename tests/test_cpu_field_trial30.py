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


def test_where_the_main_thread_blocks_is_read_from_its_blocked_samples_only():
    """Contention's "blocked in the job's own code ... most often in X" named the commonest detail of
    every "other" sample, the running ones included: a loop that mostly ran its own code at one line
    and blocked at another was said to block at the first."""
    from dataclasses import replace

    from gpuwatch.model import stacks as lb

    from gpuwatch.diagnosis.stack_signals import BLOCKED, stack_signals
    from tests.test_diagnosis_frames import Knobs, build

    frames = build(Knobs(main_labels={lb.OTHER: 1.0}), 12)
    n = 0

    def mark(t):
        nonlocal n
        if t.role != lb.ROLE_MAIN_THREAD:
            return t
        n += 1
        blocked = n % 3 == 0  # one sample in three blocks in the print; the others run at line 5
        return replace(t, active=not blocked,
                       detail="print from main (train.py:29)" if blocked else "main (train.py:5)")

    frames = [replace(f, stacks=replace(f.stacks, threads=tuple(mark(t) for t in f.stacks.threads))) for f in frames]
    st = stack_signals(frames, 8.0, None)
    assert st.top(lb.ROLE_MAIN_THREAD, lb.OTHER) == "main (train.py:5)"
    assert st.top(lb.ROLE_MAIN_THREAD, BLOCKED) == "print from main (train.py:29)"
    assert 0 < st.blocked_outside < st.n_main


def test_a_job_is_not_called_idle_on_one_stack_sample():
    """tests/data/cpu_field/print_pipe.jsonl.gz: by its own clock the job spent 40 % of its first three
    ticks in its step; "Not training: ... the job's main thread is idle" stood on one stack sample
    each (blocked in its print) for two ticks. Without a GPU, Idle rests on the stack share, and no
    share of one or two samples names a stage: the verdict says it is collecting evidence."""
    verdicts = from_frames(load_frames("tests/data/cpu_field/print_pipe.jsonl.gz")).verdicts
    assert not [v.sentence for v in verdicts[:3] if v.sentence.startswith("Not training")]
    assert verdicts[1].sentence.startswith("Collecting evidence"), verdicts[1].sentence


def test_ticks_in_which_the_job_was_stopped_are_no_evidence_once_it_runs_again():
    """tests/data/cpu_field/stop_cont.jsonl.gz: the job was stopped twice. While it is stopped the
    verdict says so. After each SIGCONT the window still held the stopped ticks, whose outside load
    (others filled the freed CPUs) made Contention's figure 10.5x and 7.8x beside a steady 5.6-6.0x.
    The tick straddling the resume names nothing (review 35: it alone had said 10.5x), and the ticks
    after it read their own readings."""
    verdicts = from_frames(load_frames("tests/data/cpu_field/stop_cont.jsonl.gz")).verdicts
    stopped = [i for i, v in enumerate(verdicts) if v.sentence.startswith("The job is stopped")]
    resumed = [i for i in range(1, len(verdicts)) if i - 1 in stopped and i not in stopped]
    assert len(resumed) == 2, resumed
    for i in resumed:
        assert verdicts[i].sentence.startswith("The job runs again after a stop: collecting evidence"), i
        assert verdicts[i].speedup is None
    first = resumed[0]
    steady = [v.speedup for v in verdicts[first + 3:first + 7] if v.stage == "contention" and v.speedup]
    assert steady, [v.stage for v in verdicts[first:first + 7]]
    after = verdicts[first + 1]  # the first tick whose readings all come after the resume
    assert after.stage == "contention" and after.speedup <= max(steady) * 1.15, (after.speedup, steady)

def test_numpys_header_parser_is_no_validation_pass():
    """tests/data/cpu_field/t31_npy_disk.jsonl.gz (trial 31): a job that never validated, loading
    small .npy files with num_workers=0, read "Validation passes take 2 % of the time": np.load
    parses each header with ``ast.literal_eval``, whose name holds "_eval", and the collector flagged
    those samples (the recording keeps its flags). Its frames flag nothing now, kept or beyond."""
    from gpuwatch.model.evaluation import pass_site, validation_frame

    frames = load_frames("tests/data/cpu_field/t31_npy_disk.jsonl.gz")
    flagged = [t.frames for f in frames if hasattr(f.stacks, "threads") for t in f.stacks.threads
               if t.role == "main" and t.evaluating]
    assert flagged and all(any(x.startswith("literal_eval (ast.py") for x in fs) for fs in flagged)
    for fs in flagged:
        assert not any(validation_frame(x) or pass_site(x, kept=False) for x in fs), fs
    assert validation_frame("run_eval (train.py:30)") and pass_site("evaluate (train.py:30)", kept=False)
