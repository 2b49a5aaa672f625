"""One stack sample in a save names no Disk verdict.

Trial 33 (tests/data/cpu_field/t33_lightning_ckpt.jsonl.gz: Lightning's ModelCheckpoint every 25
steps, 0.3 % of the job's time by its own clock): ticks 3-7 read "Checkpoint saving holds training:
the main thread was writing a checkpoint in 1 of its last 5 stack samples (20 %)", the one sample in
Lightning's path handling, with no storage sign and the disk 0 % busy.
"""

from __future__ import annotations

from gpuwatch.diagnosis.thresholds import CHECKPOINT_MIN_SAMPLES
from gpuwatch.model.verdict import IO
from gpuwatch.replay import load_frames
from gpuwatch.report.gather import from_frames


def test_a_save_seen_in_one_sample_is_not_disk():
    verdicts = from_frames(load_frames("tests/data/cpu_field/t33_lightning_ckpt.jsonl.gz")).verdicts
    assert not [v for v in verdicts if v.stage == IO], [v.sentence for v in verdicts if v.stage == IO]
    said = [e for v in verdicts for e in v.evidence if e.stage == IO and e.signal == "checkpoint_samples"]
    assert said and all(not e.supports for e in said)  # the few samples are said, pointing away
    assert CHECKPOINT_MIN_SAMPLES >= 2
    # the job is CPU-bound by its own clock (step 79 %, waits 11 %): that is what it says most
    stages = [v.stage for v in verdicts]
    assert stages.count("cpu_bound") > len(stages) // 2


def test_a_checkpoint_speedup_is_a_floor_where_saves_were_missed():
    """Saves that fell between the stack samples make the checkpoint share a floor ("at least 9 %"),
    and the speed-up from it a floor too, said "or more" beside it."""
    from types import SimpleNamespace

    from gpuwatch.diagnosis.speedup import shown
    from gpuwatch.diagnosis.stages import StageResult
    from gpuwatch.model import verdict as v

    def result(floor: bool) -> StageResult:
        return StageResult(stage=v.IO, fires=True, warn=True, strength=0.5, weight=0.2, evidence=(),
                           sub="checkpoint", facts={"checkpoint": 0.2, "checkpoint_n": 60, "checkpoint_floor": floor})

    s = SimpleNamespace(gpu=SimpleNamespace(compute_busy=None))
    assert shown(v.IO, result(True), s) == (1.2, True)
    assert shown(v.IO, result(False), s) == (1.2, False)
