"""The contract under the agents: typed state, the plan, settings and budgets, the run context."""
