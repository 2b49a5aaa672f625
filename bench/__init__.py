"""Benchmarks and bottleneck scenarios for gpuwatch (not installed; run from the repository root)."""
