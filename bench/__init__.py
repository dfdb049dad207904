"""Benchmarks: speed, memory and robustness of the system (not answer quality, which is evals/)."""
