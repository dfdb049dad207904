"""Greedy replies of the trained student (transformers + its LoRA adapter) and of the base, on dev
tasks the exported GGUF declined: is the decline in the training or in the export?"""
import sys
from pathlib import Path

import torch
from peft import PeftModel

from distill.student import load_student
from evals.bfcl_data import load_tasks
from evals.bfcl_run import messages_for

BASE = Path.home() / ".cache/aisearch/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
ADAPTER = Path(sys.argv[1])
IDS = sys.argv[2].split(",")
data = Path.home() / ".cache/aisearch/bfcl/2026.3.23/bfcl_eval/data"
cats = tuple(sorted({i.rsplit("_", 1)[0] for i in IDS}))
tasks = {t.id: t for t in load_tasks(data, cats, "dev", 20)}
model, tok = load_student(BASE)
model.eval()


def reply(m, tid):
    msgs = messages_for(tasks[tid], "nothought")
    prompt = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = m.generate(**ids, max_new_tokens=60, do_sample=False)
    return tok.decode(out[0][ids["input_ids"].shape[1]:], skip_special_tokens=True)


for tid in IDS:
    print("BASE", tid, repr(reply(model, tid)[:100]), flush=True)
tuned = PeftModel.from_pretrained(model, str(ADAPTER))
tuned.eval()
for tid in IDS:
    print("LORA", tid, repr(reply(tuned, tid)[:100]), flush=True)
