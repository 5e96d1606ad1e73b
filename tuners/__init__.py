"""Training-throughput measurement (`rocmdoctor bench`, `compare`) and the tuner.

Nothing here imports torch at module import time: torch is imported only by the benchmark
worker child process (`python -m rocmdoctor.tuners.bench.worker`) and functions that run there.
"""
