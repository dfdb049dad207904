"""Plan-only timing on the bench-dag questions: prefix, plan seconds, plan JSON, raw reply."""
import asyncio, json, sys, time, os, dataclasses
sys.path.insert(0, os.environ.get("REPO", "/work/main"))
from langchain_core.callbacks import AsyncCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from bench import dag
from core.settings import load_settings
from graph.builder import build_graph
from evals.qa_context import open_context

class Grab(AsyncCallbackHandler):
    def __init__(self): self.texts = []
    async def on_llm_end(self, response, **kw):
        self.texts.append(response.generations[0][0].text)

async def main(n: int, out: str, warm: bool) -> None:
    settings = load_settings()
    qs = dag.load_questions(dag.DATA, n)
    rows = []
    grab = Grab()
    async with open_context(settings, corpus=dag.CORPUS, systems=("aisearch",), judge=False, collection="hotpotqa") as ctx:
        graph = build_graph(checkpointer=InMemorySaver())
        base = ctx.run.models if warm else dag.uncached(ctx.run.models)
        def models(role):
            m = base(role)
            return m.with_config(callbacks=[grab]) if role == "planner" else m
        run = dataclasses.replace(ctx.run, models=models, tool_cache=None, _cache={})
        for q in qs:
            grab.texts.clear()
            fork, info = await dag.plan_once(graph, run, q["question"], f"exp-{q['id']}-{time.time()}")
            row = {"id": q["id"], "question": q["question"], **info, "replies": list(grab.texts)}
            print(json.dumps({k: row[k] for k in ("id", "master_route", "prefix_s", "plan_s", "tasks")}), flush=True)
            rows.append(row)
    json.dump(rows, open(out, "w"), indent=1)

asyncio.run(main(int(sys.argv[1]), sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "warm"))
