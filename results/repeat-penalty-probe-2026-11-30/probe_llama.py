"""The exported GGUF in llama.cpp on the prompt transformers' chat template writes, and the chat
completion llama.cpp formats itself: is the difference the template?"""
import sys
from pathlib import Path

from llama_cpp import Llama
from transformers import AutoTokenizer

from evals.bfcl_data import load_tasks
from evals.bfcl_run import messages_for

GGUF = Path(sys.argv[1])
IDS = sys.argv[2].split(",")
data = Path.home() / ".cache/aisearch/bfcl/2026.3.23/bfcl_eval/data"
cats = tuple(sorted({i.rsplit("_", 1)[0] for i in IDS}))
tasks = {t.id: t for t in load_tasks(data, cats, "dev", 20)}
tok = AutoTokenizer.from_pretrained(str(Path.home() / ".cache/aisearch/models/qwen2.5-coder-0.5b-instruct-q4_k_m.tokenizer"))
llm = Llama(model_path=str(GGUF), n_ctx=4096, n_threads=2, verbose=False)
for tid in IDS:
    msgs = messages_for(tasks[tid], "nothought")
    prompt = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    raw = llm.create_completion(prompt, max_tokens=30, temperature=0)["choices"][0]["text"]
    chat = llm.create_chat_completion(msgs, max_tokens=30, temperature=0)["choices"][0]["message"]["content"]
    print(tid, "RAW", repr(raw[:70]), "| CHAT", repr(chat[:70]), flush=True)
print(repr(prompt[-400:]))
