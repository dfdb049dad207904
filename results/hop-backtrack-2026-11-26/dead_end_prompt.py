import asyncio, json, sys
sys.path.insert(0, '.')
from core.settings import load_settings
from core.run import open_run
from agents.hop_read import read_hop, read_other_answer, hop_sources, first_turns
from langchain_core.messages import AIMessage, HumanMessage
from models.structured import message_text
from prompts import render

rec = {}
for l in open('results/qa-musique-tune-check-3c85567/questions.jsonl'):
    d = json.loads(l); rec[d['id']] = d
async def main():
    async with open_run(load_settings(), connections={}) as run:
        for qid, hop_i in [('2hop__57209_67668', 0), ('2hop__79875_72187', 0)]:
            d = rec[qid]; a = d['systems']['aisearch']; ch = a['chain']
            titles = ch[hop_i]['titles']
            ev = {e['title']: e for e in a['evidence']}
            seen=[]; passages=[]
            for e in a['evidence']:
                if e['title'] in titles and e['id'] not in seen: passages.append(e); seen.append(e['id'])
            passages = passages[:4]
            q = ch[hop_i]['question']; rejected = ch[hop_i]['answer']; dead = ch[hop_i+1]['question']
            print(q, [p['title'] for p in passages])
            print(' first:', await read_hop(run, q, passages, asked=(d['question'],)))
            sources = hop_sources(passages, q)
            turns = [*first_turns(sources, q), AIMessage(content=rejected), HumanMessage(content=render("hop_read_dead_end", answer=rejected, dead_end=dead))]
            raw = message_text(await run.model('writer').bind(max_tokens=24, temperature=0).ainvoke(turns))
            print(' raw dead-end reply:', repr(raw))
            print(' other:', await read_other_answer(run, q, passages, rejected, dead, asked=(d['question'],)))
asyncio.run(main())
