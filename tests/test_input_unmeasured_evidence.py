"""An Unknown verdict that describes an input wait gpuwatch cannot explain carries its evidence.

Trial 32 (tests/data/cpu_field/t32_ratelimit.jsonl.gz: two DataLoader workers sleep in a token
bucket; the job waits for batches 85 % of its time by its own clock): the report said "The verdicts
carried no evidence" beside a sentence quoting the wait and the workers' CPU, and the warning beside
it said "the stage the verdict names takes precedence" where the verdict named none.
"""

from __future__ import annotations

from gpuwatch.diagnosis.compose import MET_AS_WELL, MET_BESIDE_UNKNOWN
from gpuwatch.model.verdict import UNKNOWN
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown

PATH = "tests/data/cpu_field/t32_ratelimit.jsonl.gz"


def test_the_unexplained_input_wait_is_evidenced_under_unknown():
    got = from_frames(load_frames(PATH))
    said = [v for v in got.verdicts if v.stage == UNKNOWN and v.sentence.startswith("Input-bound for a reason")]
    assert len(said) > len(got.verdicts) // 2
    last = said[-1]
    mine = {e.signal: e for e in last.evidence if e.stage == UNKNOWN}
    assert mine["data_wait"].supports and mine["data_wait"].value >= 0.5
    assert mine["worker_cpu"].supports and mine["worker_cpu"].value < 0.5  # sleeping workers use no CPU
    assert mine["storage"].supports and mine["storage"].text.startswith("no storage sign")
    report = build_report(got, NOT_RECORDED, "replay", path=PATH)
    unknown = [e for e in report.evidence if e.stage == UNKNOWN]
    assert {"data_wait", "worker_cpu", "worker_busy", "storage"} <= {e.signal for e in unknown}
    md = render_markdown(report)
    assert "The verdicts carried no evidence" not in md
    for v in said:
        for stage, why in v.warned:
            assert why != MET_AS_WELL  # "the stage the verdict names" named none
    assert any(why == MET_BESIDE_UNKNOWN for v in said for _, why in v.warned)


def test_remedy_commands_name_the_pid_or_a_plain_placeholder():
    """"py-spy dump --pid <its pid>" showed as "\\<its pid>" in the Markdown report (trial 32): the
    training process's own PID where there is one, else a plain PID / WORKER_PID to fill in."""
    from types import SimpleNamespace

    from gpuwatch.diagnosis.remedies import main_pid

    assert main_pid(SimpleNamespace(job=SimpleNamespace(main_pids=frozenset({4242})))) == "4242"
    assert main_pid(SimpleNamespace(job=SimpleNamespace(main_pids=frozenset({1, 2})))) == "PID"  # ranks
    assert main_pid(SimpleNamespace(job=SimpleNamespace(main_pids=frozenset()))) == "PID"
    got = from_frames(load_frames(PATH))
    said = " ".join(r for v in got.verdicts for r in v.remedies)
    assert "py-spy dump --pid WORKER_PID" in said and "<" not in said
