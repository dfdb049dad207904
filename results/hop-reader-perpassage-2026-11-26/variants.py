"""Hop-reader variants on tune-split hop questions (gold known): the whole-context reader against
reading each passage alone and voting. Prints accuracy per variant."""
import asyncio, json, sys, re, time
from pathlib import Path
sys.path.insert(0, "/work/main")
from core.settings import load_settings
from evals.qa_context import open_context

from agents.focus import terms
from agents.hop_read import hop_sources, restates


def same_name(answer, other):
    mine, theirs = terms(answer), terms(other)
    return bool(mine and theirs) and (mine <= theirs or theirs <= mine)
from agents.chain_answer import clean_hop_answer, grounded, UNKNOWN
from langchain_core.messages import HumanMessage, SystemMessage, AIMessage
from models.structured import message_text, strip_thinking, decode_entities
from prompts import render

CASES = [
 ("Who married Frederick Douglass?", ["Helen Pitts Douglass", "Helen Pitts"]),
 ("What character does Neil Patrick Harris also play in Batman Under the Red Hood?", ["Nightwing", "Dick Grayson"]),
 ("Who did the original voice of Meg Griffin?", ["Lacey Chabert"]),
 ("What city was Raymond Carver born in?", ["Clatskanie"]),
 ("When was British East India Company established?", ["1599"]),
 ("What is the brother of Andy Murray?", ["Jamie Murray"]),
 ("When did Nottingham Forest win the FA Cup?", ["1898", "1959"]),
 ("Where is Golestan Province located?", ["north-east", "Caspian"]),
 ("What did Audrey Hepburn win a Tony for?", ["Ondine", "Leading Actress"]),
 ("Who is the sibling of Natalie Wood?", ["Lana Wood"]),
 ("Where did Lorenzo Costa the Elder die?", ["Mantua"]),
 ("Which artist was featured on smooth jazz stations, along with Kenny G and Dave Koz?", ["George Benson"]),
 ("Who played Susan Walker in Miracle on 34th street?", ["Natalie Wood", "Mara Wilson"]),
 ("Who plays Barney in How I Met Your Mother?", ["Neil Patrick Harris"]),
 ("Who wrote What We Talk About When We Talk About Love?", ["Raymond Carver"]),
 ("Which team uses Dick's Sporting Goods Park?", ["Colorado Rapids"]),
 ("Who created the Allegory of Isabella d'Este's Coronation?", ["Lorenzo Costa"]),
 ("Which province contains Bandar-e Gaz County?", ["Golestan"]),
 ("Who has won the most BBC Sports Personality of the Year awards?", ["Andy Murray"]),
 ("Who is the publisher of abolitionist newspaper The North Star?", ["Frederick Douglass"]),
]

def ok(ans, golds):
    a = ans.lower()
    return any(g.lower() in a for g in golds)

AGAIN_RESTATED = "{answer} is named in the question itself, so it is not the answer. Which other name or phrase in the context answers the question? A short phrase copied from the context only. If the context does not say, reply: unknown\nAnswer:"

async def read(run, q, src, variant):
    model = run.model("writer").bind(max_tokens=24, temperature=0)
    if variant == "qfirst":
        user = f"Question: {q}\n\n" + render("hop_read", sources=src, question=q)
    else:
        user = render("hop_read", sources=src, question=q)
    turns = [SystemMessage(content=render("reader_system")), HumanMessage(content=user)]
    reply = message_text(await model.ainvoke(turns))
    ans = clean_hop_answer(strip_thinking(decode_entities(reply)))
    if variant in ("again", "qfirst") and ans != UNKNOWN and restates(ans, [q]):
        turns += [AIMessage(content=reply), HumanMessage(content=AGAIN_RESTATED.format(answer=ans))]
        reply2 = message_text(await model.ainvoke(turns))
        ans = clean_hop_answer(strip_thinking(decode_entities(reply2)))
    if ans != UNKNOWN and not grounded(ans, src):
        ans = UNKNOWN + "?" + ans
    if ans != UNKNOWN and restates(ans, [q]):
        ans = "RESTATES:" + ans
    return ans

async def per_passage(run, q, passages):
    """Each passage read alone; the answer most passages give (ties: the better-ranked passage)."""
    votes = []
    for rank, p in enumerate(passages):
        src = hop_sources([p], q)
        a = await read(run, q, src, "base")
        if a == UNKNOWN or a.startswith(("RESTATES", "unknown?")):
            continue
        votes.append((rank, a))
    if not votes:
        return UNKNOWN
    def support(a):
        return sum(same_name(a, b) for _, b in votes)
    best = max(votes, key=lambda v: (support(v[1]), -v[0]))
    return best[1]


async def main():
    variants = sys.argv[1:] or ["base", "again", "qfirst"]
    settings = load_settings()
    async with open_context(settings, corpus=Path("/work/shared/data/musique/corpus.jsonl"), systems=("rag",), judge=False, collection="musique") as ctx:
        run = ctx.run; s = ctx.baselines.searcher
        score = {v: 0 for v in variants}
        for q, golds in CASES:
            hits = s.rank(q, 4, "hybrid"); stored = s.fetch([h.id for h in hits])
            passages = [{"id": h.id, "title": stored[h.id].get("title",""), "content": stored[h.id].get("text",""), "kind":"document"} for h in hits]
            src = hop_sources(passages, q)
            present = ok(src, golds)
            line = []
            for v in variants:
                t=time.time(); a = await (per_passage(run, q, passages) if v == "perpassage" else read(run, q, src, v))
                score[v] += ok(a, golds) and not a.startswith(("RESTATES", "unknown?"))
                line.append(f"{v}={a!r}")
            print(("IN " if present else "-- ") + q[:60], "|", " ".join(line), flush=True)
        print(score, "of", len(CASES))

asyncio.run(main())
