"""Review 44 (2026-12-07): the reports of real CPU recordings read as an ML engineer would, every
figure set against the job's own clock and the other sections of the same report."""

from __future__ import annotations

from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames

DATA = "tests/data/cpu_field"


def _report(name: str):
    path = f"{DATA}/{name}.jsonl.gz"
    return build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path)


def test_an_epoch_fix_under_two_stages_is_said_once_with_the_latest_figures():
    """init_restarts listed persistent_workers=True under Contention ("re-created 15 times in 44 s",
    no estimate) and under CPU prep ("23 times in 59 s", with one): one fix, two sets of figures."""
    r = _report("init_restarts")
    keep = [x for x in r.remedies if x.text.startswith("persistent_workers=True")]
    assert len(keep) == 1, [x.stage for x in keep]
    assert keep[0].stage == r.remedies[0].stage  # where it first came: the headline stage's list
    assert "re-created 23 times in 59 s" in keep[0].text and "expected:" in keep[0].text
