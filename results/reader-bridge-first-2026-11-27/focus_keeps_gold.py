import sys
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[2]))
from evals.qa_data import load_questions
from evals.retrieval import default_eval_index_dir
from tools.index.service import DocSearch
from tools.index.store import IndexStore
from agents.focus import focus_passages
from evals.metrics import normalize_answer
def norm(s): return ' '.join(normalize_answer(s).split())
def has(text, golds): t=norm(text); return any(norm(g) and norm(g) in t for g in golds)
ds = DocSearch(IndexStore(default_eval_index_dir()), build_default=False)
for name, data, coll in [('musique','/work/shared/data/musique/dev.jsonl','musique'), ('hotpot','/work/shared/data/hotpotqa/dev.jsonl','hotpotqa')]:
    qs = load_questions(data, split='tune')
    cut=0; n=0; lens=[]; kept=0; present=0
    for q in qs:
        golds=[q['answer'], *(q.get('answer_aliases') or [])]
        hits = ds.search(q['question'], 8, coll)['results']
        texts=[h['snippet'][:1500] for h in hits]
        lens.append(sum(map(len,texts)))
        f=focus_passages(texts,[q['question']],2800)
        if sum(map(len,texts))>2800: cut+=1
        if has(' '.join(texts), golds):
            present+=1; kept+=has(' '.join(f), golds)
    lens.sort(); print(name, len(qs), 'cut', cut, 'median chars', lens[len(lens)//2], 'gold in 8:', present, 'kept by focus:', kept)
