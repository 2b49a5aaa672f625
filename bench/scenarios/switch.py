"""One job that switches bottleneck at known times, printing a ground-truth marker at each switch.

CUDA default: healthy -> decode -> h2d -> launch; CPU default: healthy (truth ``cpu_compute``)
-> decode -> io. ``--phases`` picks others (any of: healthy, decode, io, h2d, gpu_memory, launch),
``--phase S`` sets each phase's length (default: ``--duration`` split evenly, else 20 s). Every phase
is the same code as its own scenario, built before the first marker; DataLoader workers exist only
during the phases that use them. Each marker is ``{"t": ..., "stage": ..., "phase": i}``.
"""

from __future__ import annotations

import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from bench.scenarios import decode, gpu_memory, h2d, healthy, io_bound, launch
from bench.scenarios._common import Meter, marker, run_main, truth

STAGE = None  # several: each phase prints its own marker
DEVICES = ("cpu", "cuda")
PHASES = {
    "healthy": (healthy, lambda dev: healthy.Healthy(dev)),
    "decode": (decode, lambda dev: decode.Decode(dev)),
    "io": (io_bound, lambda dev: io_bound.DiskIO(dev)),
    "h2d": (h2d, lambda dev: h2d.H2D(dev)),
    "gpu_memory": (gpu_memory, lambda dev: gpu_memory.GpuMemory(dev)),
    "launch": (launch, lambda dev: launch.Launch(dev)),
}
DEFAULT = {"cuda": ("healthy", "decode", "h2d", "launch"), "cpu": ("healthy", "decode", "io")}
DEFAULT_PHASE_S = 20.0


def add_arguments(p) -> None:
    p.add_argument("--phases", default=None, help="comma-separated phase names, in order")
    p.add_argument("--phase", type=float, default=None, help="seconds per phase")


class Switch:
    name = "switch"

    def __init__(self, device: str, names: list[str], phase_s: float) -> None:
        self.device = device
        self.phase_s = phase_s
        self.phases = []
        for n in names:
            module, make = PHASES[n]
            if device not in module.DEVICES:
                raise SystemExit(f"scenario: error: phase {n} does not exist on {device}")
            self.phases.append((n, truth(module, device), make(device)))
        self.facts = {"phases": names, "phase_s": phase_s}

    def run(self, until: float, meter: Meter) -> None:
        # Each phase gets its full length from its own marker, whatever the previous one overran.
        for i, (n, stage, work) in enumerate(self.phases):
            end = time.time() + self.phase_s
            marker(stage, "switch", self.device, phase=i, workload=n, **getattr(work, "facts", {}))
            print(f"[switch] phase {i}: {n} ({stage}) for {end - time.time():.0f} s", file=sys.stderr, flush=True)
            meter.label = f"switch:{n}"
            work.run(end, meter)

    def close(self) -> None:
        for _, _, work in self.phases:
            work.close()


def build(args, device: str) -> Switch:
    names = args.phases.split(",") if args.phases else list(DEFAULT[device])
    unknown = [n for n in names if n not in PHASES]
    if unknown:
        raise SystemExit(f"scenario: error: unknown phase(s) {unknown}; choose from {sorted(PHASES)}")
    if args.phase is not None:
        phase_s = args.phase
    elif args.duration is not None:
        phase_s = args.duration / len(names)
    else:
        phase_s = DEFAULT_PHASE_S
    args.duration = phase_s * len(names)
    return Switch(device, names, phase_s)


if __name__ == "__main__":
    sys.exit(run_main(sys.modules[__name__]))
