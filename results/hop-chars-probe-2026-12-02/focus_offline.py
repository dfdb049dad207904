"""Offline: does the focused hop text keep the answer? IDF focus vs IDF+MiniLM focus, per budget."""
import json, math, sys
sys.path.insert(0, "/work/main")
import numpy as np
from agents import focus as F
from tools.index.embedder import Embedder
from evals.metrics import normalize_answer

emb = Embedder()

def hybrid(texts, queries, max_chars, alpha):
    if sum(len(t) for t in texts) <= max_chars: return list(texts)
    split = [F.passage_sentences(t) for t in texts]
    flat = [(i, j, s) for i, g in enumerate(split) for j, s in enumerate(g)]
    wanted = set().union(*(F.terms(q) for q in queries))
    freq = __import__("collections").Counter(t for _, _, s in flat for t in F.terms(s))
    count = len(flat) or 1
    w = {t: math.log(1 + count / freq.get(t, 1)) for t in wanted}
    lead = F.FIRST_SENTENCE_BONUS * max(w.values(), default=0.0)
    idf = np.array([sum(w.get(t, 0.0) for t in F.terms(s)) + (lead if j == 0 else 0.0) for i, j, s in flat])
    vec = emb.encode([s for _, _, s in flat]); qv = emb.encode([" ".join(queries)])[0]
    cos = vec @ qv
    top = idf.max() or 1.0
    score = (1 - alpha) * idf / top + alpha * cos
    chosen = set(); left = max_chars
    for k in np.argsort(-score, kind="stable"):
        i, j, s = flat[k]
        if len(s) + 1 <= left: chosen.add((i, j)); left -= len(s) + 1
    return [" ".join(s for j, s in enumerate(g) if (i, j) in chosen) for i, g in enumerate(split)]

def has(text, ans):
    return bool(ans) and normalize_answer(ans) in normalize_answer(text)

def main(path):
    recs = [json.loads(l) for l in open(path)]
    configs = [("idf", 1000, None), ("idf", 700, None), ("idf", 550, None)] + [(f"hyb{a}", b, a) for a in (0.5, 0.7) for b in (1000, 700, 550)]
    res = {c: [0, 0] for c in configs}
    n_last = n_mid = 0
    for q in recs:
        a = q["systems"]["aisearch"]; ev = {e["id"]: e for e in a["evidence"]}
        golds = [q["gold"], *q.get("aliases", [])]
        for i, h in enumerate(a["chain"]):
            if not h["evidence_ids"]: continue
            texts = [ev[e]["content"] for e in h["evidence_ids"]]
            last = i == len(a["chain"]) - 1
            targets = golds if last else ([h["answer"]] if h["answer"] else [])
            if not any(has(" ".join(texts), t) for t in targets): continue
            if last: n_last += 1
            else: n_mid += 1
            for c in configs:
                name, b, al = c
                kept = F.focus_passages(texts, [h["question"]], b) if al is None else hybrid(texts, [h["question"]], b, al)
                res[c][0 if last else 1] += any(has(" ".join(kept), t) for t in targets)
    print("hops with the target in their whole passages: last", n_last, "earlier", n_mid)
    for c, (l, m) in res.items(): print(c, "last", l, "earlier", m)

main(sys.argv[1])
