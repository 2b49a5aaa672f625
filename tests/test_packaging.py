"""The package ships every module: pyproject lists packages by hand (package-dir maps tui/ and
collectors/ under gpuwatch.*), so a new subfolder that is not listed would be left out of wheels."""

from __future__ import annotations

import pathlib
import subprocess
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _declared():
    text = (ROOT / "pyproject.toml").read_text()
    if tomllib is None:
        import re

        block = re.search(r"packages = \[(.*?)\]", text, re.S).group(1)
        return set(re.findall(r'"([^"]+)"', block))
    return set(tomllib.loads(text)["tool"]["setuptools"]["packages"])


def _on_disk():
    found = set()
    for top, name in (("gpuwatch", "gpuwatch"), ("collectors", "gpuwatch.collectors"), ("tui", "gpuwatch.tui")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    return found


def test_every_package_folder_is_declared():
    missing = _on_disk() - _declared()
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_collectors_never_import_textual():
    code = (
        "import sys, pkgutil, importlib, gpuwatch.collectors as c\n"
        "for m in pkgutil.iter_modules(c.__path__):\n"
        "    importlib.import_module('gpuwatch.collectors.' + m.name)\n"
        "import gpuwatch.diagnosis, gpuwatch.engine, gpuwatch.recording\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]\n"
        "print(','.join(bad))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"collectors/diagnosis pulled in UI modules: {r.stdout.strip()}"


def test_no_generic_top_level_names_are_importable_from_the_install():
    r = subprocess.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('tui'), u.find_spec('collectors'))"],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.stdout.strip() == "None None"
