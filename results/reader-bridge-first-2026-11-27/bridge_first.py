"""Reading ablation on MuSiQue tune: RAG's prompt vs a bridge-first prompt, same top-5 passages."""
import asyncio, json, sys, re
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[2]))
from langchain_core.messages import HumanMessage, SystemMessage
from agents.short_answer import clean_short
from evals.baseline import first_line, format_context
from evals.metrics import exact_match, token_f1
from evals.qa_data import load_questions
from evals.retrieval import default_eval_index_dir
from models.config import load_model_settings
from models.factory import build_chat_model
from prompts import render
from tools.index.search import Searcher
from tools.index.store import IndexStore

COT_SYSTEM = "You are a question answering assistant. You read numbered passages and answer questions that need two or more facts put together."
COT = """Context:
{context}

The question may describe something without naming it (a person, place or thing found through another fact). First give the name of that person, place or thing as the context gives it; then answer the question with a short phrase only.
Reply with JSON: {{"named": "<the name the question's description stands for>", "answer": "<a name, a date, a number or a few words>"}}

Question: {question}"""
ANSWER = re.compile(r"Answer:\s*(.+)", re.I)

def best(q, short):
    golds=[q['answer'], *(q.get('answer_aliases') or [])]
    return max(exact_match(short,g) for g in golds), max(token_f1(short,g) for g in golds)

async def main(which, out):
    qs = load_questions('/work/shared/data/musique/dev.jsonl', split='tune')[:int(sys.argv[3]) if len(sys.argv)>3 else None]
    s = load_model_settings()
    w = build_chat_model('writer', s).model_copy(update={'streaming': False})
    rag = w.bind(max_tokens=32, temperature=0); cot = w.bind(max_tokens=96, temperature=0, response_format={'type':'json_schema','json_schema':{'name':'reading','schema':{'type':'object','properties':{'named':{'type':'string','maxLength':60},'answer':{'type':'string','maxLength':80}},'required':['named','answer'],'additionalProperties':False}}})
    searcher = Searcher(IndexStore(default_eval_index_dir()).require('musique'))
    def passages(query, k):
        hits = searcher.rank(query, k, 'hybrid'); stored = searcher.fetch([h.id for h in hits])
        return [{'id': h.id, 'title': stored[h.id].get('title',''), 'content': stored[h.id].get('text','')} for h in hits if h.id in stored]
    tot={v:[0,0] for v in which}
    with open(out,'w') as sink:
        for q in qs:
            top = passages(q['question'], 5); rec={'id':q['id'],'gold':q['answer']}
            for v in which:
                if v=='rag':
                    r = await rag.ainvoke([SystemMessage(content=render('baseline_system')), HumanMessage(content=render('baseline_rag', context=format_context(top), question=q['question']))])
                    text=str(r.content); short=clean_short(first_line(text))
                else:
                    r = await cot.ainvoke([SystemMessage(content=COT_SYSTEM), HumanMessage(content=COT.format(context=format_context(top), question=q['question']))])
                    text=str(r.content)
                    try: short=clean_short(str(json.loads(text).get('answer','')))
                    except Exception: short=''
                em,f1=best(q,short); tot[v][0]+=em; tot[v][1]+=f1
                rec[v]={'short':short,'text':text,'em':em,'f1':f1}
            sink.write(json.dumps(rec)+'\n'); sink.flush()
    print({v:(round(a/len(qs),3), round(b/len(qs),3)) for v,(a,b) in tot.items()}, len(qs))
asyncio.run(main(sys.argv[1].split(','), sys.argv[2]))
