"""The caches: earlier answers found by meaning (``answers.py``, guarded by ``near_miss.py``) and
identical tool calls (``tool_calls.py``), in SQLite beside the thread store."""
