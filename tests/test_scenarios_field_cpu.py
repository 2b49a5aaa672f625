"""The real-code bench scenarios (torchvision, Lightning, tokenizers, checkpoints) run on the CPU and
report the ground truth they claim: their epoch structure, their own wait and save shares.

Each runs once for a few seconds, without gpuwatch: what is asserted is what the job did (its facts,
and relations between the counts it kept that hold at any speed: every epoch but the last is whole,
a validation pass follows each epoch), which holds on a loaded 2-core machine; whether gpuwatch names their
stage is scored on the H200 recordings (tests/test_h200_field.py), where the host is quiet. Needs
the ``bench`` extra (torchvision, lightning, tokenizers); skipped, saying so, without it.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _needs(package: str) -> None:
    """Skip without the package. Found, not imported: where torchvision's C extension cannot load
    (a CPU-only torch), importing it here fails; the scenarios import it through bench/scenarios/_tv.py."""
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed (pip install -e '.[torch,bench]')")


RUN_S = 5.0
"""Training seconds per job. The asserted relations hold at any speed; 5 s still gives each job
several epochs, validation passes or saves to relate on the 2-core VM (at 8 s, idle: imagefolder
7 epochs, Lightning 10, checkpoint 6 saves; half that with a second test worker beside it)."""


def _run(module: str, *args: str, seconds: float = RUN_S) -> tuple[dict, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", f"bench.scenarios.{module}", "--device", "cpu", "--duration", str(seconds), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    starts, ends = [r for r in recs if "stage" in r], [r for r in recs if r.get("event") == "end"]
    assert len(starts) == 1 and len(ends) == 1, proc.stdout
    assert ends[0]["t"] - starts[0]["t"] >= seconds - 0.5  # trained for the whole duration
    return starts[0], ends[0]


def test_imagefolder_job_restarts_its_workers_every_epoch_and_validates():
    _needs("torchvision")
    start, end = _run("imagefolder", "--workers", "1")
    assert start["stage"] == "decode"
    assert start["persistent_workers"] is False and start["workers"] == 1
    assert start["images"] == 16 * 6 and start["val_images"] == 16 * 2  # batch x epoch batches, on disk
    epochs = end["epochs"]
    assert 6 * (epochs - 1) < end["steps"] <= 6 * epochs  # whole epochs of 6 batches; the last may be cut
    assert end["val_passes"] in (epochs - 1, epochs)  # one after each epoch (not after a cut last one)
    assert 0 < end["wait_share"] < 1 and 0 <= end["val_share"] < 1
    assert end["epoch_start_wait_s"] > 0
    assert not end["data_kept"] and not Path(end["data_dir"]).exists()  # the generated JPEGs are gone


def test_imagefolder_cheaper_transform_decodes_at_half_scale_and_trains(tmp_path):
    """The "cheaper transform" fix (issue 20 item 7): ImageFolder's loader decodes each JPEG at half
    scale (PIL draft mode), and the job trains on it with the same transforms."""
    _needs("torchvision")
    from bench.scenarios._tv import SOURCE_SIZE, make_image_folder
    from bench.scenarios.imagefolder import half_scale_loader

    make_image_folder(str(tmp_path), 2, 0, 1)
    jpeg = next(tmp_path.glob("train/*/*.jpg"))
    w, h = half_scale_loader(str(jpeg)).size
    assert (w, h) == ((SOURCE_SIZE[0] + 1) // 2, (SOURCE_SIZE[1] + 1) // 2)
    start, end = _run("imagefolder", "--workers", "1", "--persistent", "--cheap")
    assert start["cheap_decode"] is True and start["stage"] == "decode"
    assert end["steps"] > 0 and 0 < end["wait_share"] < 1


def test_imagefolder_with_transforms_in_the_loop_times_them():
    """``--loop-aug``: the workers hand uint8 crops; the loop applies ColorJitter and Normalize per
    sample itself, and says how much of its time that took (the truth CPU prep's "loop" form reads)."""
    _needs("torchvision")
    start, end = _run("imagefolder", "--workers", "1", "--persistent", "--loop-aug")
    assert start["loop_aug"] is True and start["stage"] == "decode"
    assert end["steps"] > 0 and 0 < end["loop_aug_share"] < 1


def test_imagefolder_without_a_loader_is_the_model_alone():
    _needs("torchvision")
    start, end = _run("imagefolder", "--synthetic", seconds=4.0)
    assert start["stage"] in ("cpu_compute", "cpu_bound") and start["synthetic"] is True
    assert end["steps"] > 0 and "wait_share" not in end


def test_lightning_job_runs_its_fit_and_validation_loops():
    _needs("lightning")
    start, end = _run("lightning_job")
    assert start["stage"] == "decode" and start["persistent_workers"] is False
    assert start["package"] in ("lightning.pytorch", "pytorch_lightning")
    epochs, per_epoch = end["epochs"], start["epoch_batches"]
    assert per_epoch * (epochs - 1) < end["steps"] <= per_epoch * epochs  # Lightning ends the cut epoch too
    assert end["val_passes"] in (epochs - 1, epochs)
    assert 0 < end["fetch_share"] < 1 and 0 <= end["val_share"] < 1


def test_tokenising_job_sizes_its_documents_from_what_it_measured():
    _needs("tokenizers")
    start, end = _run("text_tokens", seconds=10.0)
    assert start["stage"] == "decode" and start["workers"] == 1
    # one worker needs `ratio` model steps to tokenise a batch: words were sized from both timings
    assert start["words_per_doc"] >= start["context"] and start["model_step_ms"] > 0
    assert end["steps"] >= 1 and 0 < end["wait_share"] < 1


def test_checkpoint_job_saves_the_whole_state_and_removes_it():
    start, end = _run("checkpoint", "--every", "1")
    assert start["stage"] in ("cpu_compute", "cpu_bound")
    assert end["saves"] >= 1
    # model + both AdamW moments, plus the pickle's framing
    assert start["checkpoint_bytes"] <= end["file_bytes"] <= start["checkpoint_bytes"] * 1.05
    assert 0 < end["save_share"] < 1
    assert not Path(end["dir"]).exists()


def test_compiled_job_says_it_compiles_until_its_first_step_is_done():
    proc = subprocess.run(
        [sys.executable, "-m", "bench.scenarios.healthy", "--device", "cpu", "--duration", "3", "--compile", "default"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    stages = [r for r in recs if "stage" in r]
    # compiling (no step yet), then the healthy CPU job's truth once the first step has run
    assert [r["stage"] for r in stages] == ["idle", "cpu_compute"] and stages[0]["compiling"] is True
    assert stages[0]["t"] < stages[1]["t"] and stages[1]["compile"] == "default"
    assert recs[-1]["event"] == "end" and recs[-1]["steps"] >= 1
