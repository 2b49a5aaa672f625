"""Real PyTorch training jobs, each holding the GPU back at one known stage (see README.md).

Run one from the repository root: ``python -m bench.scenarios.decode --device cpu --duration 30``.
This module lists them for ``bench/accuracy.py``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    name: str
    """What ``--scenarios`` calls it."""
    module: str
    """``bench.scenarios.<module>``."""
    stages: tuple[str, ...]
    """Ground truth, in order (one stage, or the phases of a switching job)."""
    devices: tuple[str, ...]
    args: tuple[str, ...] = ()
    cpu_stages: tuple[str, ...] | None = None
    """Ground truth on the CPU where it differs from ``stages``."""
    by_share: tuple[str, float, str] | None = None
    """(end-marker key, cut, stage): where the job's own measured share of its time (the key of its
    end marker) reaches the cut, that stage is what the job really did, whatever ``stages`` said at
    its start (a periodic event whose cost is known only once the job has run)."""

    def truth(self, device: str) -> tuple[str, ...]:
        return self.cpu_stages if device == "cpu" and self.cpu_stages is not None else self.stages


SCENARIOS = (
    Scenario("healthy", "healthy", ("gpu_bound",), ("cpu", "cuda"), cpu_stages=("cpu_compute",)),
    Scenario("io", "io_bound", ("io",), ("cpu", "cuda")),
    Scenario("decode", "decode", ("decode",), ("cpu", "cuda")),
    Scenario("h2d", "h2d", ("h2d",), ("cuda",)),
    Scenario("h2d_pinned", "h2d", ("h2d",), ("cuda",), ("--pinned",)),
    Scenario("gpu_memory", "gpu_memory", ("gpu_memory",), ("cuda",)),
    Scenario("launch", "launch", ("launch",), ("cuda",)),
    Scenario("contention", "contention", ("contention",), ("cpu", "cuda")),
    Scenario("contention_quota", "contention", ("contention",), ("cpu",), ("--hog", "quota")),
    Scenario("switch", "switch", (), ("cpu", "cuda")),
    # Real training code (issue 20): torchvision, Lightning, tokenizers, checkpoints; opt-in (FIELD).
    Scenario("imagefolder_few", "imagefolder", ("decode",), ("cpu", "cuda"), ("--workers", "2", "--persistent")),
    Scenario("imagefolder_epochs", "imagefolder", ("decode",), ("cpu", "cuda"), ("--workers", "14")),
    Scenario("imagefolder_persistent", "imagefolder", ("decode",), ("cpu", "cuda"),
             ("--workers", "14", "--persistent")),
    Scenario("imagefolder_cheap", "imagefolder", ("decode",), ("cpu", "cuda"), ("--workers", "2", "--persistent", "--cheap")),
    Scenario("imagefolder_loop", "imagefolder", ("decode",), ("cpu", "cuda"),
             ("--workers", "14", "--persistent", "--loop-aug")),
    Scenario("imagefolder_gpu", "imagefolder", ("gpu_bound",), ("cpu", "cuda"), ("--synthetic",),
             cpu_stages=("cpu_compute",)),
    Scenario("lightning", "lightning_job", ("decode",), ("cpu", "cuda")),
    Scenario("lightning_persistent", "lightning_job", ("gpu_bound",), ("cpu", "cuda"), ("--persistent",),
             cpu_stages=("cpu_compute",)),
    Scenario("tokenize", "text_tokens", ("decode",), ("cpu", "cuda")),
    Scenario("tokenize_workers", "text_tokens", ("gpu_bound",), ("cuda",), ("--workers", "12", "--fixed")),
    Scenario("healthy_compiled", "healthy", ("idle", "gpu_bound"), ("cpu", "cuda"),
             ("--compile", "max-autotune-no-cudagraphs"), cpu_stages=("idle", "cpu_compute")),
    Scenario("checkpoint", "checkpoint", ("gpu_bound",), ("cpu", "cuda"), cpu_stages=("cpu_compute",),
             by_share=("save_share", 0.20, "io")),
)
"""``healthy`` on the CPU is the "cpu compute-bound" variant: its truth is ``cpu_compute`` (the
model's compute is the limit and the input keeps up; see _common.CPU_COMPUTE). The switch job's
stages come from its markers. ``checkpoint`` is healthy unless its saves take 20 % of its time or
more by its own clock (the share at which any stage counts as "high", docs/THRESHOLDS.md): then
saving checkpoints is its cost, truth ``io`` (H200 run 21: 41 % of the time in 2.1 s saves of
1.03 GiB).

``healthy_compiled`` is the healthy job under torch.compile (max-autotune, without CUDA graphs): idle
while it compiles (its first marker), then the healthy job's truth (its second, after the first step).

The FIELD scenarios come in before/after pairs for the speed-up table (bench/fixes.py):
imagefolder_few -> imagefolder_persistent (more workers), imagefolder_epochs ->
imagefolder_persistent (persistent workers), imagefolder_few -> imagefolder_cheap (a cheaper
transform: half-scale JPEG decode), lightning -> lightning_persistent (persistent
workers), imagefolder_* -> imagefolder_gpu (no input cost: what
the estimate's "if the stage were fixed" means), tokenize -> tokenize_workers (more workers)."""

FIELD = ("imagefolder_few", "imagefolder_epochs", "imagefolder_persistent", "imagefolder_cheap", "imagefolder_loop",
         "imagefolder_gpu", "lightning",
         "lightning_persistent",
         "tokenize", "tokenize_workers", "checkpoint", "healthy_compiled")

BY_NAME = {s.name: s for s in SCENARIOS}


def default_names(device: str) -> list[str]:
    """The scenarios that exist on ``device``, minus the opt-in variants (pinned, quota, FIELD)."""
    opt_in = {"h2d_pinned", "contention_quota", *FIELD}
    return [s.name for s in SCENARIOS if device in s.devices and s.name not in opt_in]
