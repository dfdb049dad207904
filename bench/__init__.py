"""Benchmarks: speed and memory, not quality (``aisearch bench …``). Floor 5, beside ``evals``,
whose data loaders, metrics and machine line they reuse."""
