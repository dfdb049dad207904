"""The served student's greedy reply to dev tasks with the server's repeat penalty and without."""
import json
import sys
import urllib.request
from pathlib import Path

from evals.bfcl_data import load_tasks
from evals.bfcl_run import messages_for

URL, MODEL = sys.argv[1], sys.argv[2]
IDS = sys.argv[3].split(",")
data = Path.home() / ".cache/aisearch/bfcl/2026.3.23/bfcl_eval/data"
cats = tuple(sorted({i.rsplit("_", 1)[0] for i in IDS}))
tasks = {t.id: t for t in load_tasks(data, cats, "dev", 20)}
for tid in IDS:
    for penalty in (None, 1.0):
        body = {"model": MODEL, "messages": messages_for(tasks[tid], "nothought"), "max_tokens": 30, "temperature": 0}
        if penalty is not None:
            body["repeat_penalty"] = penalty
        req = urllib.request.Request(URL + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
        reply = json.load(urllib.request.urlopen(req, timeout=120))["choices"][0]["message"]["content"]
        print(tid, "server default" if penalty is None else f"repeat_penalty {penalty}", repr(reply[:60]), flush=True)
