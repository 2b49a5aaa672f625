"""Every check of the report, in the order it lists them (worst status first is the renderer's job)."""

from __future__ import annotations

from collections.abc import Sequence

from gpuwatch.collectors.environment import Environment
from gpuwatch.model.frame import Frame
from gpuwatch.model.values import Maybe
from gpuwatch.model.verdict import Verdict
from gpuwatch.report import checks_gpu as gpu
from gpuwatch.report import checks_host as host
from gpuwatch.report.model import CheckResult


def run_checks(frames: Sequence[Frame], verdicts: Sequence[Verdict], env: Maybe[Environment]) -> tuple[CheckResult, ...]:
    """Pass / warn / fail / not_checked, each with its reason, for the watched stretch of the job."""
    return (
        gpu.check_pcie_link(frames, env),
        gpu.check_other_processes(frames, env),
        gpu.check_throttling(frames, env),
        gpu.check_pageable_copies(frames, verdicts, env),
        gpu.check_ecc(frames, env),
        host.check_workers(frames, verdicts, env),
        host.check_cpu_quota(frames, env),
        host.check_swap(frames, env),
        host.check_network_fs(frames, env),
        host.check_numa(frames, env),
        host.check_stacks(frames, env),
    )
