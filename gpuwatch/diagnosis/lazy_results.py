"""A decision's stage results, each scored the first time it is read.

A decision nothing shows (the switch test's candidate, the sooner test's decisions: decide.py with
``words`` False) is read for its stage only, and the stage precedence settles it from about seven
of the ten results (a GPU-bound window never asks whether the job is CPU-bound). Scoring on first
read skips the rest. The result of each stage is what scoring it eagerly gives: scorers are pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from gpuwatch.diagnosis.stages import StageResult


class LazyResults(Mapping[str, StageResult]):
    """``{name: score(name) for name in names}``, each value worked out when first read."""

    __slots__ = ("_names", "_score", "_done")

    def __init__(self, names: Mapping[str, object], score: Callable[[str], StageResult]) -> None:
        self._names = names
        self._score = score
        self._done: dict[str, StageResult] = {}

    def __getitem__(self, name: str) -> StageResult:
        r = self._done.get(name)
        if r is None:
            if name not in self._names:
                raise KeyError(name)
            r = self._done[name] = self._score(name)
        return r

    def __contains__(self, name: object) -> bool:  # without scoring it
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
