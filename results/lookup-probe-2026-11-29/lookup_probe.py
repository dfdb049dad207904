"""Plan and run (parallel mode, no cache) a few bench dag questions; per task: its seconds, its
search calls (queries, ms), its output, and the model requests the server counted meanwhile."""
import asyncio, json, sys, time, logging
from langgraph.checkpoint.memory import InMemorySaver
from bench.dag import plan_once, mode_runs, prefix_run, execute, DATA, CORPUS, load_questions
from core.settings import load_settings
from evals.qa_context import open_context
from graph.builder import build_graph

IDS = sys.argv[1].split(",")

async def main():
    settings = load_settings(None)
    qs = [q for q in load_questions(DATA, None) if any(q["id"].startswith(i) for i in IDS)]
    async with open_context(settings, corpus=CORPUS, systems=("aisearch",), judge=False, collection="hotpotqa") as ctx:
        graph = build_graph(checkpointer=InMemorySaver())
        runs = mode_runs(ctx.run, 4)
        prefix = prefix_run(ctx.run, runs, True)
        for q in qs:
            fork, info = await plan_once(graph, prefix, q["question"], f"probe-{q['id']}-{time.time()}")
            print("Q", q["question"], "| plan", info["plan_s"])
            for t in info["plan"]["tasks"]:
                print("  PLAN", json.dumps(t)[:300])
            if fork is None:
                continue
            row = await execute(graph, runs["parallel"], fork, q["answer"])
            print("  exec", row["exec_s"], "run", row["run_s"], "short", row["short"])
            for tid, r in row["_results"].items():
                calls = [(c["tool"], json.dumps(c["args"])[:90], round(c["ms"])) for c in r["tool_calls"]]
                print(f"  TASK {tid} {r['status']} {round(r['finished_at']-r['started_at'],1)}s calls={calls} out={r['output'][:100]!r}")

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
for name in ("httpx", "chromadb", "sentence_transformers", "models.local_server", "tools"):
    logging.getLogger(name).setLevel(logging.WARNING)
asyncio.run(main())
