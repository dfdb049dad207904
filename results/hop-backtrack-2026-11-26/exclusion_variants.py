import asyncio, json, sys
sys.path.insert(0, '.')
from core.settings import load_settings
from core.run import open_run
from agents.hop_read import read_hop, hop_sources, first_turns, clean_reply, reread
from agents.chain_answer import holds
from langchain_core.messages import AIMessage, HumanMessage
from models.structured import message_text
from prompts import render

recs = {}
for f in ['results/qa-musique-tune-v5/questions.jsonl','results/qa-musique-tune-check-3c85567/questions.jsonl']:
    for l in open(f):
        d = json.loads(l); recs[d['id']] = d
CASES = [('2hop__57209_67668',0),('2hop__79875_72187',0),('2hop__108336_772156',0),('2hop__84971_67668',0),('2hop__82766_67668',0),('2hop__71016_75184',0)]
async def main():
    async with open_run(load_settings(), connections={}) as run:
        m = run.model('writer').bind(max_tokens=24, temperature=0)
        for qid, i in CASES:
            d = recs[qid]; a = d['systems']['aisearch']; ch = a['chain']
            titles = ch[i]['titles']; seen=[]; passages=[]
            for t in titles:
                for e in a['evidence']:
                    if e['title']==t and e['id'] not in seen: passages.append(e); seen.append(e['id']); break
            q = ch[i]['question']; rej = ch[i]['answer']; dead = ch[i+1]['question']
            # V2: fresh read, question says not X
            src = hop_sources(passages, q)
            q2 = f"{q} (not {rej})"
            v2 = clean_reply(await m.ainvoke(first_turns(hop_sources(passages, q), q2)))
            # V3: passages holding X removed
            rest = [p for p in passages if not holds(p, rej)]
            v3 = await read_hop(run, q, rest, asked=(d['question'],)) if rest else 'unknown'
            print(qid, '|', q, '| rejected', rej, '| gold', d['gold'])
            print('   V2', v2, 'stands' if reread(v2, src, [q, d['question']]) is None else 'not standing', '| V3', v3, [p['title'] for p in rest])
asyncio.run(main())
