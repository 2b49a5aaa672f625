"""A verdict the stability rule holds on weaker readings says what its stage last fired with.

tests/data/cpu_field/lightning_val_ckpt.jsonl.gz (trial 29: Lightning on FakeData, no file read):
a checkpoint save named Disk; held for two ticks on the readings after the save, the words made
afresh from them read "Input-bound on storage: ... the 3 DataLoader workers ... wait on reads (...
I/O pressure 0 %, disk vda 0 % busy)" with storage remedies ("Test the storage", "pack them into
large shards"): a cause with no evidence for it."""

from __future__ import annotations

from gpuwatch.diagnosis.sentence import HELD, without_epochs
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from gpuwatch.report.gather import from_frames

RECORDING = "tests/data/cpu_field/lightning_val_ckpt.jsonl.gz"


def test_a_held_verdict_keeps_the_words_its_stage_fired_with():
    verdicts = from_frames(load_frames(RECORDING)).verdicts
    held = [(i, x) for i, x in enumerate(verdicts) if HELD in x.sentence]
    assert held, "the recording holds a stage on weaker readings"
    for i, x in held:
        before = next(p for p in reversed(verdicts[:i]) if p.stage == x.stage and HELD not in p.sentence)
        head = without_epochs(before.sentence, before.phases)  # its epoch clause is the latest tick's
        assert x.sentence.startswith(head + " (said "), (x.sentence, before.sentence)
        ago = round(x.t - before.t)
        assert f"(said {ago} s ago; {HELD})" in x.sentence
        assert x.remedies == before.remedies and x.speedup == before.speedup
    disk = [x for x in verdicts if x.stage == v.IO]
    assert disk and all(x.sentence.startswith("Checkpoint saving holds training") for x in disk)
    said = " ".join(" ".join(x.remedies) for x in verdicts)
    assert "Test the storage" not in said and "wait on reads" not in " ".join(x.sentence for x in verdicts)

