"""Whose loading the main thread does itself: a validation loader with num_workers=0 beside a
training loader with workers. Read by the sentence, the remedies and the fix estimates alike."""

from __future__ import annotations

from gpuwatch.diagnosis.thresholds import MODERATE_MIN_SAMPLES, VALIDATION_WAITS


def validation_loads(f: dict) -> bool:
    """Most of the main thread's own loading (num_workers=0) is inside evaluation passes, as for the
    waits (VALIDATION_WAITS), from the MODERATE_MIN_SAMPLES samples the loading's own share is named
    on: a validation loader with num_workers=0, whatever the training loader has (trial 35: its
    training loader's 2 workers alive, the job was told "with num_workers=0 the main thread loads ...
    itself" and to add workers, on 2 loading samples, both inside a validation pass)."""
    # Only beside a training loader's workers (loader_workers): where the job has none, its training
    # loader's num_workers=0 is as likely, and a frame in the dataset's own code named like validate
    # (pydantic's model_validate, jsonschema.validate) would read as a validation pass (review 39).
    k, n = int(f.get("val_load") or 0), int(f.get("load_n") or 0)
    return bool(f.get("loader_workers")) and k >= MODERATE_MIN_SAMPLES and k > VALIDATION_WAITS * n
