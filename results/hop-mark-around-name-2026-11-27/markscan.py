import asyncio, json, sys
sys.path.insert(0, '/work/main')
from models.config import load_model_settings
from models.factory import build_chat_model
from agents.hop_chain import decompose_messages, parse_steps, is_chain, lost_names, inner_phrase
from agents.hop_mark import mark_messages, describing_phrase, BRACKETED, find_phrase, describes
from models.structured import message_text

async def main():
    model = build_chat_model("master", load_model_settings())
    recs = [json.loads(l) for l in open(sys.argv[1])]
    changed = []
    for r in recs:
        q = r['question']
        steps = parse_steps(message_text(await model.bind(max_tokens=96, temperature=0).ainvoke(decompose_messages(q))))
        if is_chain(steps, q, 4) and not lost_names(q, steps): continue
        if inner_phrase(steps, q): continue
        reply = message_text(await model.bind(max_tokens=96, temperature=0).ainvoke(mark_messages(q)))
        new = describing_phrase(reply, q)
        m = BRACKETED.search(reply); f = find_phrase(m.group(1), q) if m else None
        old = new if (f and describes(f.group(0))) else None
        if new != old:
            changed.append(r['id']); print(r['id'][:20], '|', q, '|', old, '->', new, flush=True)
    print(len(recs), 'changed', len(changed)); print(json.dumps(changed))
asyncio.run(main())
