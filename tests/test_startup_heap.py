"""The collector around start-up (gpuwatch/startup_heap.py), in a process of its own: hold and
release change that process's collector for good."""

from __future__ import annotations

import ast
import subprocess
import sys

from gpuwatch.startup_heap import STEADY_GEN0

_PROBE = """
import gc
from gpuwatch import startup_heap
before = gc.get_threshold()
startup_heap.hold()
held = gc.isenabled()
startup_heap.release()
print(repr((before, held, gc.isenabled(), gc.get_threshold(), gc.get_freeze_count() > 0)))
"""


def test_release_freezes_start_up_and_collects_the_young_generation_less_often():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout
    before, held, enabled, after, frozen = ast.literal_eval(out.strip())
    assert not held and enabled and frozen
    assert after == (STEADY_GEN0, *before[1:])  # the older generations keep their thresholds
