"""Stack frames of an evaluation pass (validation, test): told by the function's name or its file.

Shared by the stack collector, which flags a main thread whose whole stack (beyond the dozen frames
it keeps) is inside a pass, and the diagnosis, which reads that flag or, in recordings made before
it, the kept frames. Beyond the kept dozen lie the job's drivers (``main``, ``train_and_evaluate``,
a ``@torch.no_grad()`` inference entry point), under every sample: there only a frame that is
plainly a pass counts (pass_site), and the collector drops a site also seen under the training step
(collectors/stacks.py), so a driver never turns the whole run into validation.
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


NOT_PASS_FILES = ("torch/", "numpy/", "pandas/", "scipy/", "ast.py:")
"""Files whose functions are never the job's pass, whatever their names: torch.compile spent 40-70 %
of its ticks in Inductor's ``valid_vec_isa_list`` (torch/_inductor/cpu_vec_isa.py), and ``np.load``
reads each file's header with ``ast.literal_eval`` (trial 31: a job that never validated read "a
validation pass was seen once in 10 s")."""


def validation_frame(frame: str) -> bool:
    """One stack frame ("function (file:line)") is inside an evaluation pass (never one of
    NOT_PASS_FILES)."""
    func, _, where = frame.partition(" (")
    if VALIDATION_FILES.search(frame):
        return True
    return not where.startswith(NOT_PASS_FILES) and bool(VALIDATION_WORDS.search(func))


PASS_NAMES = frozenset({
    "val", "valid", "validate", "validation", "eval", "evaluate", "evaluation", "run_validation",
    "run_evaluation", "_run_evaluation", "validation_loop", "evaluation_loop", "eval_loop", "val_loop",
    "validate_epoch", "evaluate_epoch", "val_epoch", "eval_epoch", "validation_epoch", "validation_step",
    "test_step", "eval_step", "val_step"})
"""Whole function names (the last part of a qualified name) that are a pass and nothing else; unlike
VALIDATION_WORDS, ``train_and_evaluate`` or ``fit_eval`` (a driver that also trains) is none."""
LIGHTNING_EVAL = re.compile(r"[ /(]evaluation_loop\.py:")
"""Lightning's evaluation loop module: its frames run only during a pass."""


def pass_site(frame: str, kept: bool) -> bool:
    """One frame of a main thread's stack is inside a pass: any of VALIDATION_WORDS and the no_grad
    decorator among the kept frames (as recordings have always been read), only LIGHTNING_EVAL and
    PASS_NAMES beyond them, where a driver under every sample sits."""
    if kept:
        return validation_frame(frame)
    func, _, where = frame.partition(" (")
    if LIGHTNING_EVAL.search(frame):
        return True
    return not where.startswith(NOT_PASS_FILES) and func.rsplit(".", 1)[-1].lower() in PASS_NAMES


IMPORT_FRAME = re.compile(r"^(_find_and_load|_call_with_frames_removed|_load_unlocked) \(<frozen importlib")
"""importlib's own frames: the frames leaf-ward of them run the body of a module being imported."""


def imported_through(frames: tuple[str, ...] | list[str]) -> int:
    """How many frames from the leaf run the body of a module being imported: up to the outermost
    importlib frame, else 0. Importing Lightning's ``evaluation_loop.py`` runs its module and class
    bodies, frames of that file, with no pass at all (trial 40: "a validation pass was seen once in
    19 s" from one sample of a job that had not validated yet, importing its logger connector)."""
    for i in range(len(frames) - 1, -1, -1):
        if IMPORT_FRAME.match(frames[i]):
            return i + 1
    return 0


def pass_sites(frames: tuple[str, ...] | list[str], kept: int) -> frozenset[str]:
    """The sites (see :func:`site`) of a main thread's whole stack, leaf first, that are inside a pass
    (:func:`pass_site`, the first ``kept`` frames read as kept), outside a module being imported."""
    start = imported_through(frames)
    return frozenset(site(t) for i, t in enumerate(frames) if i >= start and pass_site(t, i < kept))


def site(frame: str) -> str:
    """A frame without its line number: the function where it is, whichever line the sample caught."""
    return frame.rsplit(":", 1)[0]


def in_evaluation(t: ThreadStack) -> bool:
    """A main thread sampled inside an evaluation pass: flagged from its whole stack by the
    collector, or, in a recording made before the flag (None), told by the frames it kept."""
    if t.evaluating is not None:
        return t.evaluating
    return any(validation_frame(f) for f in t.frames[imported_through(t.frames):])
