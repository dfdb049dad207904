"""Side by side: the Master's old reply schema/prompt vs the bounded one; per question, both in turn."""
import asyncio, json, sys, time, statistics as st
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from pydantic import BaseModel, Field
from core.settings import load_settings
from evals.qa_context import open_context
from evals.qa_data import read_jsonl, split_of
from agents.assessment import assess_prompt, AssessmentReply, searchable_documents, calibrate, route_for
from models.structured import schema_response_format
from core.state import Complexity, Strategy
from langchain_core.messages import HumanMessage

class OldReply(BaseModel):
    rationale: str = ""
    resolved_query: str = ""
    intent: str = ""
    facts_to_find: list[str] = Field(default_factory=list)
    complexity: Complexity
    needs_external_info: bool = False
    needs_decomposition: bool = False
    strategy: Strategy = "direct"

def questions():
    qs = [(q["question"], "regression") for q in read_jsonl("/work/main/evals/data/regression.jsonl")]
    mus = [q for q in read_jsonl("/work/shared/data/musique/dev.jsonl") if split_of(q["id"]) == "tune"][30:36]
    hot = [q for q in read_jsonl("/work/shared/data/hotpotqa/dev.jsonl") if split_of(q["id"]) == "tune"][200:206]
    return qs + [(q["question"], "musique") for q in mus] + [(q["question"], "hotpotqa") for q in hot]

async def main():
    settings = load_settings()
    async with open_context(settings, corpus=Path("/work/shared/data/musique/corpus.jsonl"), systems=("rag",), judge=False, collection="musique") as ctx:
        run = ctx.run
        docs = searchable_documents(run.tools.running_specs().values())
        rows = []
        for q, source in questions():
            new_prompt = assess_prompt("Thursday, 2026-11-26", "(none)", q, docs)
            old_prompt = new_prompt.replace('Reply with JSON only, the rationale one short sentence:\n{"rationale": "...", "resolved_query"', 'Reply with JSON only:\n{"resolved_query"')
            row = {"q": q, "source": source}
            for name, schema, prompt in (("old", OldReply, old_prompt), ("new", AssessmentReply, new_prompt)):
                m = run.model("master").bind(temperature=0, extra_body={"response_format": schema_response_format(schema)})
                t = time.perf_counter(); r = await m.ainvoke([HumanMessage(content=prompt)]); sec = time.perf_counter() - t
                usage = r.response_metadata.get("token_usage") or {}
                try:
                    reply = schema.model_validate_json(r.content)
                    reading = calibrate(AssessmentReply.model_validate(reply.model_dump()), q)
                    route = f"{route_for(reading)}/{reading.strategy}"
                except Exception as exc:
                    route = f"ERROR {exc}"[:80]
                row[name] = {"s": round(sec, 2), "completion": usage.get("completion_tokens"), "prompt": usage.get("prompt_tokens"), "route": route, "text": r.content}
            rows.append(row)
            print(json.dumps({k: (v if not isinstance(v, dict) else {kk: vv for kk, vv in v.items() if kk != "text"}) for k, v in row.items()}), flush=True)
        json.dump(rows, open("/tmp/diag/master_ab.json", "w"), indent=1)
        for name in ("old", "new"):
            print(name, "completion median", st.median(r[name]["completion"] for r in rows), "s median", st.median(r[name]["s"] for r in rows))
        print("same route", sum(r["old"]["route"] == r["new"]["route"] for r in rows), "of", len(rows))

asyncio.run(main())
