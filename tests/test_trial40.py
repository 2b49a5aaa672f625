"""Trial 40 (2026-12-07, the 2-core CPU VM, no GPU): new CPU training jobs with their own clocks,
watched by an adversarial tester (tests/data/cpu_field/README.md for those kept as recordings)."""

from __future__ import annotations

from gpuwatch.model.evaluation import imported_through, pass_sites

# The main thread of a Lightning job (num_sanity_val_steps=0, its first validation 61 s later) at
# fit's start, importing its logger connector: the dozen frames its sample kept, then, beyond them,
# the import chain through Lightning's loop modules (as Trainer.fit imports them) to the script.
IMPORTING = (
    "_ResultCollection (lightning/pytorch/trainer/connectors/logger_connector/result.py:328)",
    "<module> (lightning/pytorch/trainer/connectors/logger_connector/result.py:312)",
    "_call_with_frames_removed (<frozen importlib._bootstrap>:241)",
    "_LoaderBasics.exec_module (<frozen importlib._bootstrap_external>:940)",
    "_load_unlocked (<frozen importlib._bootstrap>:690)",
    "_find_and_load_unlocked (<frozen importlib._bootstrap>:1147)",
    "_find_and_load (<frozen importlib._bootstrap>:1176)",
    "<module> (lightning/pytorch/trainer/connectors/logger_connector/logger_connector.py:26)",
    "_call_with_frames_removed (<frozen importlib._bootstrap>:241)",
    "_LoaderBasics.exec_module (<frozen importlib._bootstrap_external>:940)",
    "_load_unlocked (<frozen importlib._bootstrap>:690)",
    "_find_and_load_unlocked (<frozen importlib._bootstrap>:1147)",
    "_find_and_load (<frozen importlib._bootstrap>:1176)",
    "<module> (lightning/pytorch/loops/evaluation_loop.py:43)",
    "_call_with_frames_removed (<frozen importlib._bootstrap>:241)",
    "_find_and_load (<frozen importlib._bootstrap>:1176)",
    "<module> (lightning/pytorch/loops/__init__.py:17)",
    "_find_and_load (<frozen importlib._bootstrap>:1176)",
    "<module> (job_lit_steps.py:3)",
)


def test_a_module_being_imported_is_not_an_evaluation_pass():
    """One sample of it carried "evaluating": Lightning's evaluation_loop.py (a pass's file) was being
    imported, and the verdict said "A validation pass was seen once in 19 s" for six ticks; the report
    kept it."""
    assert imported_through(IMPORTING) == len(IMPORTING) - 1  # all but the script
    assert not pass_sites(IMPORTING, kept=12)
    # a pass that imports something lazily is still a pass: its frames are root-ward of the import
    lazy = ("<module> (torchmetrics/functional/__init__.py:5)", "_find_and_load (<frozen importlib._bootstrap>:1176)",
            "validation_step (job.py:40)", "_EvaluationLoop.run (lightning/pytorch/loops/evaluation_loop.py:145)",
            "<module> (job.py:90)")
    assert pass_sites(lazy, kept=12) == {"validation_step (job.py", "_EvaluationLoop.run (lightning/pytorch/loops/evaluation_loop.py"}
    # no import: as before
    assert pass_sites(lazy[2:], kept=12) == pass_sites(lazy, kept=12)
