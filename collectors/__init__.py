"""Collectors: each reads one part of the world around the watched job into frozen samples.

Nothing here imports textual: collectors produce samples, ``gpuwatch.diagnosis`` judges them,
``gpuwatch.tui`` shows them.
"""
