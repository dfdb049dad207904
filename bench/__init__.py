"""Benchmarks of speed and cost, not answer quality: ``aisearch bench …`` (``app/bench_cli.py``)."""
