"""gpuwatch: what is holding your GPU back, live, from outside the training process."""

from gpuwatch import _sourcetree

__version__ = "0.1.0"

_sourcetree.install()
