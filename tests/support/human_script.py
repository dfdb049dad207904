"""The scripted endpoint's rules for the human-in-the-loop tests over HTTP and the CLI.

An ambiguous question ("When was he born?") that the Master asks about when it may, and a sum the
Planner plans as one task on the real ``python`` server.
"""

from __future__ import annotations

from tests.support.fakes import EXEC_JUDGE, MASTER, PLANNER, WRITER, assessment

VAGUE = "When was he born?"
WHO = "Who do you mean by 'he'?"
EINSTEIN = "Albert Einstein was born on 14 March 1879."
SUM = "What is 17 * 23 + 4?"
PLAN = {
    "reasoning": "One calculation.",
    "tasks": [
        {
            "id": "t1",
            "goal": "Compute 17 * 23 + 4",
            "tool": "python.calculate",
            "args": {"expression": "17 * 23 + 4"},
        }
    ],
}
RULES = [  # first match wins: the Master's prompt ends with its JSON reply, the Writer's does not
    ("(Albert Einstein)\n\nReply with JSON", assessment("simple", resolved="When was Albert Einstein born?")),
    ('"clarify": ""', {**assessment("simple", resolved=VAGUE), "clarify": WHO}),
    ("(Albert Einstein)", EINSTEIN),
    (MASTER, assessment("complex", "parallel", resolved=SUM)),
    (PLANNER, PLAN),
    (EXEC_JUDGE, {"sufficient": True, "result": "395"}),
    (WRITER, "395"),
]
