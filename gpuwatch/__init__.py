"""gpuwatch: what is holding your GPU back, live, from outside the training process."""

__version__ = "0.1.0"
