"""One loader, one worker count: where a verdict's sentence counts the DataLoader workers and its
remedy quotes the loader's num_workers, they are the same number. Replayed on the real H200 field
recordings (tests/data/h200/README.md), whose epoch jobs re-create their workers: the window's mean
alive read "the 11 DataLoader workers compute" beside "Raise num_workers from 14"."""

from __future__ import annotations

import glob
import re

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.replay import load_frames

RECORDINGS = sorted(glob.glob("tests/data/h200/field_*.jsonl.gz") + glob.glob("tests/data/h200/run25_*.jsonl.gz"))
SAID = re.compile(r"the (\d+) DataLoader workers? (?:compute|each use|use)")
RAISE = re.compile(r"num_workers from (\d+)")


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_the_sentence_counts_the_workers_the_remedy_raises(path):
    a = Analysis()
    both = 0
    for f in load_frames(path):
        v = a.update(f)
        said = SAID.search(v.sentence or "")
        raised = next((m for r in v.remedies if (m := RAISE.search(r))), None)
        if said and raised:
            both += 1
            assert said.group(1) == raised.group(1), (f.seq, v.sentence, raised.group(0))
    if "imagefolder_epochs" in path:  # the job that re-creates 14 workers every epoch says both
        assert both > 0


def test_the_epoch_job_says_its_loaders_num_workers():
    a = Analysis()
    said = {m.group(1) for f in load_frames("tests/data/h200/field_imagefolder_epochs.jsonl.gz")
            if (m := SAID.search(a.update(f).sentence or ""))}
    assert said == {"14"}  # launched with --workers 14 (the recording's command line)


SAME_TWICE = re.compile(r"(\d+\.\d+ cores?) CPU(?: each)? while it waits[^;)]*; \1 on average")


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_the_workers_cpu_is_said_once_where_both_readings_agree(path):
    """'0.18 core CPU each while it waits ...; 0.18 core on average': the mean over every tick is said
    only where it reads otherwise than the waiting ticks' figure."""
    a = Analysis()
    said = [v.sentence for f in load_frames(path) if SAME_TWICE.search((v := a.update(f)).sentence or "")]
    assert said == []


def test_one_worker_is_not_said_to_use_cpu_each():
    """The demo's loader has one worker (tests/data/demo/demo_cpu_decode_again.jsonl.gz): "the 1 DataLoader worker
    computes (1.00 core CPU each ...)" read as if there were several."""
    a = Analysis()
    said = [v.sentence for f in load_frames("tests/data/demo/demo_cpu_decode_again.jsonl.gz")
            if "the 1 DataLoader worker " in ((v := a.update(f)).sentence or "")]
    assert said
    assert not [t for t in said if re.search(r"the 1 DataLoader worker \w+ \([\d.]+ cores? CPU each", t)]
