"""Greedy replies of the exported GGUF loaded by transformers (dequantized): export or serving?"""
import sys
from pathlib import Path

import torch

from distill.student import load_student
from evals.bfcl_data import load_tasks
from evals.bfcl_run import messages_for

GGUF = Path(sys.argv[1])
IDS = sys.argv[2].split(",")
data = Path.home() / ".cache/aisearch/bfcl/2026.3.23/bfcl_eval/data"
cats = tuple(sorted({i.rsplit("_", 1)[0] for i in IDS}))
tasks = {t.id: t for t in load_tasks(data, cats, "dev", 20)}
model, tok = load_student(GGUF)
model.eval()
for tid in IDS:
    msgs = messages_for(tasks[tid], "nothought")
    prompt = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=40, do_sample=False)
    print("EXPORT", tid, repr(tok.decode(out[0][ids["input_ids"].shape[1]:], skip_special_tokens=True)[:90]), flush=True)
