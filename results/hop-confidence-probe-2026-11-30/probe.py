"""Probe: how sure the reader is of each hop's answer, beside whether the chain ended right.

Run from the repository, the model server free: `.venv/bin/python
results/hop-confidence-probe-2026-11-30/probe.py RECORDS OUT.jsonl`. For every question whose
hop chain was complete, each hop is read again as `agents/hop_read.read_hop` reads it (its first
turn: the same prompt over the passages the record says it read) with the reply's token
log-probabilities; one JSON line per question: EM of the chain's answer and RAG's, and per hop the
answer, the probability of its first token, the mean and the minimum token log-probability.
"""
import asyncio, json, math, sys
from agents.hop_read import hop_sources, clean_reply, ANSWER_TOKENS
from evals.metrics import exact_match
from evals.decline_margin import reply_logprobs
from models.factory import build_chat_model
from models.config import load_model_settings
from langchain_core.messages import HumanMessage, SystemMessage
from prompts import render

def best(pred, r):
    return max(exact_match(pred, g) for g in [r['gold'], *(r.get('aliases') or [])])

async def main(path, out):
    w = build_chat_model('writer', load_model_settings()).model_copy(update={'streaming': False})
    model = w.bind(max_tokens=ANSWER_TOKENS, temperature=0, logprobs=True, top_logprobs=2)
    with open(out, 'w') as sink:
        for line in open(path):
            r = json.loads(line); a = r['systems']['aisearch']; chain = a.get('chain') or []
            if not chain or any(h['status'] != 'answered' for h in chain):
                continue
            by_title = {}
            for e in a['evidence']:
                by_title.setdefault(e['title'], e)
            hops = []
            for h in chain:
                passages = [by_title[t] for t in h['titles'] if t in by_title]
                turns = [SystemMessage(content=render('reader_system')),
                         HumanMessage(content=render('hop_read', sources=hop_sources(passages, h['question']), question=h['question']))]
                reply = await model.ainvoke(turns)
                lps = [float(p['logprob']) for p in reply_logprobs(reply)]
                lps = [x for x in lps if x > -1e9]
                hops.append({'recorded': h['answer'], 'answer': clean_reply(reply),
                             'first_p': math.exp(lps[0]) if lps else None,
                             'mean_lp': sum(lps) / len(lps) if lps else None,
                             'min_lp': min(lps) if lps else None, 'tokens': len(lps)})
            row = {'id': r['id'], 'em': best(a['short'] or a['prediction'] or '', r),
                   'rag_em': best(r['systems']['rag']['short'] or '', r), 'hops': hops}
            sink.write(json.dumps(row) + '\n'); sink.flush()
            print(row['em'], row['rag_em'], [(x['answer'], round(x['first_p'] or 0, 2), round(x['min_lp'] or 0, 2)) for x in hops], flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))
