"""Run from a source checkout: map ``gpuwatch.collectors`` and ``gpuwatch.tui`` to the sibling
``collectors/`` and ``tui/`` folders, as an install does through setuptools' ``package-dir``.

Only active when this package has no ``collectors/`` inside it (i.e. it was imported straight from
the repository, e.g. ``python -m gpuwatch`` in the repo root), and appended last to
``sys.meta_path``, so an installed or editable package always wins.
"""

from __future__ import annotations

import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
_SIBLINGS = {"gpuwatch.collectors": "collectors", "gpuwatch.tui": "tui"}


class _SiblingFinder:
    """A meta path finder (``find_spec`` is all the import system asks of one). Not derived from
    importlib.abc.MetaPathFinder: importing importlib.abc brings importlib.resources, tempfile,
    shutil, bz2, lzma and random along, which nothing else on the way to the first frame needs."""

    def find_spec(self, name, path=None, target=None):
        folder = _SIBLINGS.get(name)
        if folder is None:
            return None
        d = os.path.join(_ROOT, folder)
        init = os.path.join(d, "__init__.py")
        if not os.path.isfile(init):
            return None
        return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[d])


def install() -> None:
    if os.path.isdir(os.path.join(_HERE, "collectors")):
        return  # an installed package: the subpackages are inside it
    if not any(isinstance(f, _SiblingFinder) for f in sys.meta_path):
        sys.meta_path.append(_SiblingFinder())
