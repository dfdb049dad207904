"""Hop by hop: a multi-hop question split into simple questions, each searched and answered in turn.

SRSA's serial strategy with the Planner's decomposition (seed 001 §3, seed 002; IRCoT and
self-ask in spirit): the model splits "What is the seat of the county where Van Hook Township
is?" into "1. Which county is Van Hook Township in?" and "2. What is the seat of #1?". Each hop
searches its question with the earlier answers written in (``#1`` → "Mountrail County"),
reads the passages it found and answers in a few words (``agents/hop_read.py``); the last hop's
answer is the answer, and every hop is a cited reason (``agents/chain_answer.py``). A split that
drops a name the question gives is not followed (:func:`lost_names`), nor one that copies a worked
example's step (:func:`copied_steps`), and a later hop's answer
must come from a passage about the earlier answer it asks about (``off_subject``). A hop whose
passages do not say stops the chain, unless it is the first hop of the model's split: the chain
then starts again from the phrase the model marks in the question (:func:`split_again`). A
stopped chain's question is searched whole too (a broken chain never leaves the Writer with less
than a single search of the question would give it), and the Writer reads everything found, with
the findings.

A question the model keeps whole (one step) takes the serial strategy's other path (the
documents the first passages name, ``agents/strategies.py``): title links stay one signal for
single questions, not the only second hop. Bounded by ``budgets.max_chain_hops``, the tool-call
budget and the wall clock.
"""

from __future__ import annotations

import logging
import re
import time
from functools import cache
from itertools import chain, count
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from agents.chain_answer import UNKNOWN, WHOLE_QUESTION
from agents.focus import terms
from agents.hop_mark import describes, find_phrase, mark, name_step, rest_step
from agents.hop_read import read_hop
from agents.planner import publish
from agents.strategies import SearchTools, run_search, search_task, search_tools
from core.plan import Plan, Task, current_plan
from core.run import Run, RunContext, current_run
from core.state import HopRecord, SearchState, resolved_query, tool_calls_used
from models.errors import MODEL_ERRORS, describe_model_error
from models.structured import decode_entities, message_text, strip_thinking
from prompts import render
from tools.question_forms import NAME_OF_ANSWER, STEP_OPENER

log = logging.getLogger(__name__)

STEP = re.compile(r"^\s*(\d+)\s*[.):]\s*(.+?)\s*$")
REFERENCE = re.compile(r"#(\d+)")
DECOMPOSE_TOKENS = 96  # up to four short questions
CHAIN_K = 4  # passages searched per hop
RESTATED = 0.9  # a first step with this share of the question's words restates it
MIN_INNER_TERMS = 2  # "the conflict" alone is too vague to search; "the socialist candidate" is not
NAME = re.compile(r"(?<!^)(?<![.?!]\s)\b[A-Z][\w'’-]*|\b\d{3,4}\b")  # a name's word, a year
MAX_INNER_SHARE = 0.85  # an inner phrase with this share of the question's words is the question


def parse_steps(reply: str) -> list[str]:
    """The numbered questions of a decomposition reply, in order.

    Reading stops at the first line that is not a numbered question once some were read (the
    model may go on to invent a next example), and at a question that refers to an answer not
    yet given (``#3`` in the second question); such a list is cut before it.
    """
    steps: list[str] = []
    for line in strip_thinking(decode_entities(reply)).splitlines():
        match = STEP.match(line)
        if not match:
            if steps and line.strip():
                break
            continue
        text = match.group(2).strip()
        if any(int(n) < 1 or int(n) > len(steps) for n in REFERENCE.findall(text)):
            break
        steps.append(text)
    return steps


def resolve(step: str, answers: list[str]) -> str:
    """A step's question with the earlier answers written in for ``#n``."""
    return REFERENCE.sub(lambda m: answers[int(m.group(1)) - 1], step)


def hop_subject(step: str, answers: list[str]) -> tuple[str, str]:
    """The earlier answers ``step`` asks about (``#n``), and the step without them: what a passage
    that answers the hop must be about (``agents/hop_read.py``)."""
    named = [answers[int(n) - 1] for n in REFERENCE.findall(step) if 0 < int(n) <= len(answers)]
    return " and ".join(named), REFERENCE.sub(" ", step)


def is_chain(steps: list[str], question: str, max_hops: int) -> bool:
    """Whether ``steps`` is a chain worth following: two to ``max_hops`` questions that use earlier
    answers (independent questions are a comparison or a list, read by other means), the first of
    which is not the question itself restated (the 1.5B often does that: nothing is split)."""
    if not 2 <= len(steps) <= max_hops:
        return False
    asked = terms(question)
    restated = len(terms(REFERENCE.sub("", steps[0])) & asked) >= RESTATED * len(asked)
    return any(REFERENCE.search(step) for step in steps[1:]) and not restated


def named_already(step: str, hops: list[HopRecord]) -> HopRecord | None:
    """The answered earlier hop whose answer ``step`` only asks the name of ("What is the name of
    #1?"): that answer is the name, and searching for it would find nothing more."""
    match = NAME_OF_ANSWER.match(step)
    k = int(match.group("ref")) - 1 if match else -1
    return hops[k] if 0 <= k < len(hops) and hops[k]["status"] == "answered" else None


def lost_names(question: str, steps: list[str]) -> set[str]:
    """The names and numbers of ``question`` (capitalised words past its first, numbers of three or
    four digits) that none of ``steps`` keeps: a split that drops one asks about something else
    ("What town was named after an animal?" for "… the town of Antelope, Kansas …")."""
    named = set().union(*(terms(match.group(0)) for match in NAME.finditer(question.strip())))
    return named - terms(" ".join(steps))


@cache
def example_steps() -> frozenset[str]:
    """The steps of the split's worked examples (``prompts/hop_decompose_examples.md``), lowercased."""
    return frozenset(
        match.group(2).strip().lower()
        for line in render("hop_decompose_examples").splitlines()
        if (match := STEP.match(line))
    )


def copied_steps(question: str, steps: list[str]) -> list[str]:
    """The steps of a split that a worked example holds word for word and whose words ``question``
    does not all have: the 1.5B copied the example instead of splitting ("Which governor signed
    the Clean Air Act of 1970?" for a question about Governor Vaudreuil)."""
    examples, asked = example_steps(), terms(question)
    return [s for s in steps if s.lower() in examples and not terms(REFERENCE.sub(" ", s)) <= asked]


def inner_phrase(steps: list[str], question: str) -> str | None:
    """The describing phrase of ``question`` that a split asked about out of order, if any.

    The 1.5B often restates the question as its first step and asks for the thing it describes
    only after it, with no reference ("1. What party was the socialist candidate part of who ran
    for president in 1912? 2. Who is the socialist candidate?"). The later step's subject, when
    it stands word for word in the question and describes rather than names, is what to ask
    first; the question with it replaced by ``#1`` is the rest.
    """
    for step in steps[1:]:
        if REFERENCE.search(step) or not STEP_OPENER.match(step):
            continue
        subject = STEP_OPENER.sub("", step).strip().rstrip("?").strip()
        found = find_phrase(subject, question)
        if found is None:
            continue
        phrase = found.group(0)
        words = len(terms(phrase))
        if MIN_INNER_TERMS <= words <= MAX_INNER_SHARE * len(terms(question)) and describes(phrase):
            return phrase
    return None


def decompose_messages(question: str) -> list[BaseMessage]:
    """The split's conversation: the instructions, worked examples as earlier turns (a small model
    follows turns far better than examples inside one prompt, which it copies), then the question."""
    messages: list[BaseMessage] = [SystemMessage(content=render("hop_decompose"))]
    for example in render("hop_decompose_examples").strip().split("\n\n"):
        asked, _, steps = example.partition("\n")
        messages += [HumanMessage(content=asked), AIMessage(content=steps)]
    return [*messages, HumanMessage(content=question)]


async def decompose(run: Run, question: str) -> list[str]:
    """The model's split of ``question`` into simple questions; [] when the call fails."""
    model = run.model("master").bind(max_tokens=DECOMPOSE_TOKENS, temperature=0)
    try:
        reply = await model.ainvoke(decompose_messages(question))
    except MODEL_ERRORS as exc:
        log.warning(
            "splitting the question into hops failed (%s); searching it whole", describe_model_error(exc)
        )
        return []
    return parse_steps(message_text(reply))


async def search_whole(
    run: Run, question: str, tools: SearchTools, tasks: list[Task], update: dict[str, Any]
) -> dict[str, Any]:
    """``update`` with a search of the whole question added: the passages the Writer reads when
    the chain breaks off (a wrong or unreadable hop must not cost what plain retrieval finds)."""
    task = search_task(WHOLE_QUESTION, question, tools, k=run.settings.budgets.search_k, deps=[tasks[-1].id])
    found = await run_search(run, task, 1)
    merged = publish(Plan(tasks=[*tasks, task], version=1), "augment")
    return update | {
        "plan": merged["plan"],
        "plan_log": update["plan_log"] + merged["plan_log"],
        "results": update["results"] | found["results"],
        "evidence": update["evidence"] | found["evidence"],
    }


def start_chain(steps: list[str], remark_last: bool = False) -> list[HopRecord]:
    """The hops of a new chain, none searched yet; with ``remark_last`` the last one is marked again
    for a describing phrase once the earlier answers are written in (``refine_hop``)."""
    return [
        HopRecord(
            step=step,
            query="",
            answer="",
            task_id="",
            status="pending",
            remark=remark_last and n == len(steps) - 1,
        )
        for n, step in enumerate(steps)
    ]


async def marked_chain(run: Run, question: str) -> list[HopRecord]:
    """A two-hop chain from the describing phrase the model marks in ``question`` (the name it
    describes, then the question with that name written in); [] when it marks none."""
    question = decode_entities(question)
    phrase = await mark(run, question)
    if phrase is None:
        return []
    return start_chain([name_step(phrase), rest_step(question, phrase, 1)], remark_last=True)


async def refine_hop(run: Run, hops: list[HopRecord], index: int, query: str) -> list[HopRecord]:
    """``hops`` with the pending hop at ``index`` split in two when its question, earlier answers
    written in, still describes something without naming it ("Which river flows through the capital
    of Egypt?"), while the chain is within ``budgets.max_chain_hops``."""
    if not hops[index].get("remark") or len(hops) >= run.settings.budgets.max_chain_hops:
        return hops
    phrase = await mark(run, query)
    if phrase is None:
        return hops
    log.info("hop %d still describes %r: asked first", index + 1, phrase)
    inner = start_chain([name_step(phrase), rest_step(query, phrase, index + 1)], remark_last=True)
    return [*hops[:index], *inner, *hops[index + 1 :]]


def free_id(name: str, tasks: list[Task]) -> str:
    """``name``, or ``name`` numbered when a task has it already (a first hop searched again by a
    new chain)."""
    taken = {task.id for task in tasks}
    candidates = chain([name], (f"{name}r{n}" for n in count(2)))
    return next(candidate for candidate in candidates if candidate not in taken)


async def split_again(run: Run, state: SearchState, hops: list[HopRecord]) -> list[HopRecord] | None:
    """A new chain from the phrase the model marks in the question, when the first hop of the
    model's own split found nothing; None when the chain came from marking already or marking
    gives the same first hop. The 1.5B's splits go wrong in ways marking does not ("Who was
    honored with the award Dhondo Keshav Karve received?" where the bracketed phrase asks for the
    award first)."""
    if any(record.get("remark") for record in hops):
        return None
    again = await marked_chain(run, resolved_query(state))
    if not again or again[0]["step"] == hops[0]["step"]:
        return None
    log.info(
        "hop 1 of the split found nothing: the chain from the marked phrase %s", [h["step"] for h in again]
    )
    return again


async def split_question(
    state: SearchState, runtime: Runtime[RunContext]
) -> Command[Literal["hop", "serial_search"]]:
    """The serial strategy's first step: a chain of simple questions is followed hop by hop, a
    question kept whole is searched as it is (``serial_search``)."""
    run = await current_run(runtime)
    query = resolved_query(state)
    if search_tools(state, run) is None:
        return Command(goto="serial_search", update={"hops": []})
    steps = await decompose(run, query)
    chained = is_chain(steps, query, run.settings.budgets.max_chain_hops)
    dropped = lost_names(query, steps) if chained else set()
    copied = copied_steps(query, steps) if chained else []
    if chained and not dropped and not copied:
        log.info("split into %d hops: %s", len(steps), steps)
        return Command(goto="hop", update={"hops": start_chain(steps)})
    if dropped:
        log.info("the split %s drops %s from the question: not followed", steps, sorted(dropped))
    if copied:
        log.info("the split copies the worked example's %s: not followed", copied)
    phrase = inner_phrase(steps, query)
    if phrase is not None:
        hops = start_chain([name_step(phrase), rest_step(query, phrase, 1)], remark_last=True)
        hops[0]["context"] = query  # the phrase may have lost its modifiers ("… who ran in 1912")
        log.info("the split asked for %r after restating the question: the chain %s", phrase, hops)
        return Command(goto="hop", update={"hops": hops})
    hops = await marked_chain(run, query)
    if hops:
        log.info("the split kept the question whole; its marked phrase makes the chain %s", hops)
        return Command(goto="hop", update={"hops": hops})
    return Command(goto="serial_search", update={"hops": []})


async def hop(state: SearchState, runtime: Runtime[RunContext]) -> Command[Literal["hop", "writer"]]:
    """Search and answer the chain's next hop; go on to the next, or to the Writer."""
    run = await current_run(runtime)
    budgets = run.settings.budgets
    tools = search_tools(state, run)
    hops = [HopRecord(**record) for record in state.get("hops") or []]
    index = next((i for i, record in enumerate(hops) if record["status"] == "pending"), None)
    out_of_time = time.time() - state.get("started_at", time.time()) > budgets.wall_clock_s
    if tools is None or index is None or out_of_time or tool_calls_used(state) >= budgets.max_tool_calls:
        return Command(goto="writer")
    answers = [record["answer"] for record in hops[:index]]
    earlier = named_already(hops[index]["step"], hops[:index])
    if earlier is not None:  # the hop's answer is the earlier one, found by that hop's search
        hops[index] |= {
            "query": resolve(hops[index]["step"], answers),
            "answer": earlier["answer"],
            "task_id": earlier["task_id"],
            "status": "answered",
        }
        log.info("hop %d only asks the name of %r: answered by it", index + 1, earlier["answer"])
        return Command(goto="writer" if index == len(hops) - 1 else "hop", update={"hops": hops})
    hops = await refine_hop(run, hops, index, resolve(hops[index]["step"], answers))
    query = resolve(hops[index]["step"], answers)
    plan = current_plan(state)
    tasks = list(plan.tasks) if plan else []
    searched = f"{query} {hops[index]['context']}" if hops[index].get("context") else query
    task_id = free_id(f"h{index + 1}", tasks)
    task = search_task(task_id, searched, tools, k=CHAIN_K, deps=[tasks[-1].id] if tasks else None)
    update: dict[str, Any] = publish(Plan(tasks=[*tasks, task], version=1), "augment" if tasks else "single")
    update |= await run_search(run, task, 1)
    passages = [update["evidence"][eid] for eid in update["results"][task.id]["evidence_ids"]]
    try:
        subject = hop_subject(hops[index]["step"], answers)
        answer = await read_hop(run, query, passages, asked=(state["query"],), subject=subject)
    except MODEL_ERRORS as exc:
        problem = describe_model_error(exc)
        log.warning("reading hop %d failed (%s); the Writer reads what was found", index + 1, problem)
        answer = UNKNOWN
        update["missing"] = [f"hop {index + 1}: {query} ({problem})"]
    status: Literal["unanswered", "answered"] = "unanswered" if answer == UNKNOWN else "answered"
    hops[index] |= {
        "query": query,
        "answer": "" if answer == UNKNOWN else answer,
        "task_id": task.id,
        "status": status,
    }
    log.info("hop %d/%d %r -> %r", index + 1, len(hops), query, answer)
    if status == "unanswered" and index == 0:
        reopened = await split_again(run, state, hops)
        if reopened is not None:
            return Command(goto="hop", update=update | {"hops": reopened, "waves": state.get("waves", 0) + 1})
    done = status == "unanswered" or index == len(hops) - 1
    if status == "unanswered":
        update = await search_whole(run, state["query"], tools, [*tasks, task], update)
    update |= {"hops": hops, "waves": state.get("waves", 0) + 1}
    return Command(goto="writer" if done else "hop", update=update)
