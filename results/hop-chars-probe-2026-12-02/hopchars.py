"""Re-read every hop of a collection's chains at several HOP_CHARS budgets (stock reader).

Prints per budget: answers equal to the recorded 1000-char answer, last-hop gold hits, prompt tokens.
"""
import asyncio, json, sys, time
sys.path.insert(0, "/work/main")
import agents.hop_read as hr
from core.settings import load_settings
from core.run import open_run
from evals.metrics import exact_match
from agents.chain_answer import UNKNOWN

def norm(s): return " ".join(s.lower().replace(",", " ").split())

async def main(path, budgets):
    recs = [json.loads(l) for l in open(path)]
    settings = load_settings()
    stats = {b: dict(same=0, gold=0, last=0, known=0, prompt=0, calls=0, secs=0.0) for b in budgets}
    async with open_run(settings) as run:
        model = run.model("reader")
        for q in recs:
            a = q["systems"]["aisearch"]; ev = {e["id"]: e for e in a["evidence"]}
            golds = [q["gold"], *q.get("aliases", [])]
            for i, h in enumerate(a["chain"]):
                if not h["evidence_ids"]: continue
                passages = [ev[e] for e in h["evidence_ids"]]
                last = i == len(a["chain"]) - 1
                line = []
                for b in budgets:
                    hr.HOP_CHARS = b
                    t = time.time()
                    ans = await hr.read_hop(run, h["question"], passages, asked=(q["question"],))
                    st = stats[b]; st["secs"] += time.time() - t
                    st["prompt"] += len(hr.hop_sources(passages, h["question"])); st["calls"] += 1
                    st["same"] += norm(ans) == norm(h["answer"] or UNKNOWN)
                    st["known"] += ans != UNKNOWN
                    if last:
                        st["last"] += 1
                        st["gold"] += max(exact_match(ans, g) for g in golds)
                    line.append(f"{b}={ans!r}")
                print(f"{'L' if last else ' '} rec={h['answer']!r} | " + " ".join(line), flush=True)
    for b, st in stats.items():
        print(b, st)

asyncio.run(main(sys.argv[1], [int(x) for x in sys.argv[2:]]))
