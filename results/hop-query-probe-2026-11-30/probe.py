"""Probe: the rank of a later hop's needed document under three queries (no model).

Run from the repository: `.venv/bin/python results/hop-query-probe-2026-11-30/probe.py
results/qa-hotpotqa-tune-o140-d7650ca/questions.jsonl hotpotqa` (output.txt beside it).
(a) the hop's question as searched, (b) the question and the sentence of the earlier hop's passage
holding its answer, (c) the question and the whole question; 99 = not in the top 20.
"""
import json,sys,re
from tools.index.store import IndexStore
from tools.index.search import Searcher
from evals.retrieval import default_eval_index_dir
from agents.focus import passage_sentences
f, coll = sys.argv[1], sys.argv[2]
s = Searcher(IndexStore(default_eval_index_dir()).require(coll))
def titles(q, n=20):
    hits = s.rank(q, n, "hybrid"); st = s.fetch([h.id for h in hits])
    return [st[h.id].get('title','') for h in hits if h.id in st]
def rank(ts,t): return ts.index(t)+1 if t in ts else 99
tot={'a':0,'b':0,'c':0}; n=0
for l in open(f):
    r=json.loads(l); a=r['systems']['aisearch']; ch=a['chain']
    sup=set(r.get('supporting_titles') or [])
    for i,h in enumerate(ch):
        if i==0 or not h['question'] or h['status']=='pending': continue
        prev=ch[i-1]
        if prev['status']!='answered': continue
        seen=set(prev['titles'])
        need=[t for t in sup if t not in seen]
        if not need: continue
        ev=[e for e in a['evidence'] if e['title'] in prev['titles']]
        sent=next((x for e in ev for x in passage_sentences(e['content']) if prev['answer'].lower() in x.lower()), '')
        qs={'a':h['question'],'b':h['question']+' '+sent,'c':h['question']+' '+r['question']}
        rk={k:min(rank(titles(q),t) for t in need) for k,q in qs.items()}
        n+=1
        for k in rk: tot[k]+= rk[k]<=4
        print(h['status'][:4], rk, h['question'][:60])
print(n, 'needed paragraph in top 4:', tot)
