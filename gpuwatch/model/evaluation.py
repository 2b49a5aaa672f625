"""Stack frames of an evaluation pass (validation, test): told by the function's name or its file.

Shared by the stack collector, which flags a main thread whose whole stack (beyond the dozen frames
it keeps) is inside a pass, and the diagnosis, which reads that flag or, in recordings made before
it, the kept frames.
"""

from __future__ import annotations

import re

from gpuwatch.model.stacks import ThreadStack

VALIDATION_WORDS = re.compile(
    r"(^|[._ ])(val|valid|validate|validation|validation_step|eval|evaluate|evaluation|evaluation_loop|"
    r"_evaluation_loop|test_step|_run_evaluation)([._]|$)|EvaluationLoop", re.IGNORECASE)
"""A main-thread function of an evaluation pass: named for validation/evaluation (the user's
``validate``/``evaluate``, Lightning's ``_EvaluationLoop``, ``validation_step``). Matched on the
function's name only (the part of a frame before " ("): the file part names the script, whose
``<module>`` frame is under every sample, and a script named ``train_val.py`` or ``run_eval.py``
made every sample of a job that never validated read as a validation pass."""
VALIDATION_FILES = re.compile(
    r"^decorate_context \(torch/utils/_contextlib\.py|[ /(]evaluation_loop\.py:")
"""Frames of an evaluation pass told by their file: Lightning's loop module, and the
``torch.no_grad`` decorator's wrapper (torch/utils/_contextlib.py). A ``with torch.no_grad():``
block leaves no frame, so a pass written that way is seen only through a function named for it."""


def validation_frame(frame: str) -> bool:
    """One stack frame ("function (file:line)") is inside an evaluation pass. torch's own functions
    are never the job's pass, whatever their names: torch.compile spent 40-70 % of its ticks in
    Inductor's ``valid_vec_isa_list`` (torch/_inductor/cpu_vec_isa.py), read as validation passes."""
    func, _, where = frame.partition(" (")
    if VALIDATION_FILES.search(frame):
        return True
    return not where.startswith("torch/") and bool(VALIDATION_WORDS.search(func))


def in_evaluation(t: ThreadStack) -> bool:
    """A main thread sampled inside an evaluation pass: flagged from its whole stack by the
    collector, or, in a recording made before the flag, told by the frames it kept."""
    return t.evaluating or any(validation_frame(f) for f in t.frames)
