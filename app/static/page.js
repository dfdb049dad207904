// The search page: runs a question over the HTTP app's server-sent-event routes and shows the route,
// the plan, each task and the answer as they stream. Everything the server sends is inserted as
// text (textContent), never as HTML; links are made only from http(s) addresses.

const TOKEN_KEY = "aisearch.token";
const THREAD_KEY = "aisearch.thread";
const MAX_EVENTS = 50000; // one run's events at most: a stream that never ends is cut here
const OUTPUT_CHARS = 160; // a task's output shown in the progress list
const TOOL_ERROR_PREFIX = /^Error executing tool \S+: /; // the MCP client's words before the server's

const $ = (id) => document.getElementById(id);
const page = {
  form: $("search"), query: $("q"), ask: $("ask"), stop: $("stop"), status: $("status"),
  settings: $("settings"), token: $("token"), clarify: $("clarify"), reviewPlan: $("review-plan"),
  newThread: $("new-thread"), pause: $("pause"), pauseBody: $("pause-body"),
  question: $("question"), short: $("short-answer"), answer: $("answer"), gaps: $("gaps"),
  sourcesTitle: $("sources-title"), sources: $("sources"), progress: $("progress"), history: $("history"),
};
const session = { thread: sessionStorage.getItem(THREAD_KEY), controller: null, configurable: {} };

/** An element with attributes and children; strings become text nodes. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

/** The address of a source when it is a web page (http or https), else null. */
function webAddress(source) {
  try {
    const url = new URL(source);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

/** Character references the model writes for quotes ("&#34;"), decoded; a trailing partial one held back. */
function decodeEntities(text) {
  const named = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
  return text
    .replace(/&(?:#\d*|#x[0-9a-f]*|[a-z]*)$/i, "")
    .replace(/&#(\d+);|&#x([0-9a-f]+);|&(amp|lt|gt|quot|apos);/gi, (whole, dec, hex, name) => {
      if (name) return named[name.toLowerCase()];
      const code = dec ? Number.parseInt(dec, 10) : Number.parseInt(hex, 16);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    });
}

function setStatus(text, kind = "info") {
  page.status.textContent = text;
  page.status.className = kind;
}

function setBusy(busy) {
  page.ask.disabled = busy;
  page.stop.hidden = !busy;
  document.querySelector("main").setAttribute("aria-busy", String(busy));
}

function headers() {
  const token = page.token.value.trim();
  return {
    "Content-Type": "application/json",
    Accept: "text/event-stream",
    ...(token ? { Authorization: `Bearer ${token}` } : {}),
  };
}

/** A failed response's message: FastAPI's ``detail`` (a string, or a list of field errors). */
async function failure(response) {
  let detail = response.statusText;
  try {
    const body = await response.json();
    detail = Array.isArray(body.detail) ? body.detail.map((item) => item.msg).join("; ") : body.detail;
  } catch {
    // not JSON: keep the status text
  }
  if (response.status === 401) {
    page.settings.open = true;
    page.token.focus();
    return "This server needs its access token: type it under Options, then search again.";
  }
  return `The server answered ${response.status}: ${detail}`;
}

/** ``{event, data}`` of a server-sent event stream; data parsed as JSON when there is any. */
async function* serverSentEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    const cut = buffer.endsWith("\r") ? buffer.length - 1 : buffer.length; // a CR whose LF is still coming
    buffer = buffer.slice(0, cut).replace(/\r\n?/g, "\n") + buffer.slice(cut);
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length || event !== "message") {
        const text = data.join("\n");
        yield { event, data: text ? JSON.parse(text) : null };
      }
    }
  }
}

/** What one run shows: its progress (route, plan, tasks, reviews) and its answer as it streams. */
class RunView {
  constructor() {
    this.tasks = new Map();
    this.messages = [];
    this.texts = new Map();
    this.failures = []; // "tool: why" of each task that failed, shown with an answer that has no sources
    this.paused = false;
  }

  handle(data) {
    const handlers = {
      route: () => this.route(data),
      tools: () => this.line(`Candidate tools: ${data.candidates.join(", ") || "none"}`),
      plan: () => this.plan(data),
      task_start: () => this.taskStart(data),
      task_end: () => this.taskEnd(data),
      review: () => this.line(`Review: ${data.decision}. ${data.reason}`),
      cache: () => this.line(
        `Answered before: "${data.query}" (similarity ${data.similarity.toFixed(2)}; the team took ${data.saved_s.toFixed(1)} s)`,
        "step route"),
      token: () => this.token(data),
      answer: () => showAnswer(data.answer, this.failures),
      interrupt: () => { this.paused = true; showPause(data.value); },
    };
    handlers[data.event]?.();
  }

  line(text, className = "step") {
    const item = el("p", { class: className }, text);
    page.progress.append(item);
    return item;
  }

  route(data) {
    const a = data.assessment || {};
    const how = [a.complexity, a.strategy && `strategy ${a.strategy}`, a.decided_by && `decided by ${a.decided_by}`];
    this.line(`Route: ${data.route} (${how.filter(Boolean).join(", ")})`, "step route");
  }

  plan(data) {
    const tasks = new Map(data.tasks.map((task) => [task.id, task]));
    const waves = data.waves?.length ? data.waves : [data.tasks.map((task) => task.id)];
    const section = el("div", { class: "plan" },
      el("h3", {}, `Plan v${data.version} (${data.mode}${data.fallback ? ", fallback" : ""})`));
    const list = el("ol", { class: "waves" });
    waves.forEach((wave, index) => {
      const items = el("ul", { class: "tasks" });
      for (const id of wave) {
        const task = tasks.get(id) || { id, goal: "", tool: null };
        const early = this.tasks.get(id)?.early ? this.tasks.get(id) : null; // started while the plan streamed
        const status = early ? early.status : el("span", { class: "task-status waiting" }, "waiting");
        const item = el("li", { class: "task" }, status, " ", el("strong", {}, task.id), `: ${task.goal} `,
          el("span", { class: "tool" }, `(${task.tool || "model"})`));
        if (early) {
          const output = early.item.querySelector(".output");
          if (output) item.append(output);
          early.item.remove();
        }
        this.tasks.set(id, { item, status, tool: task.tool });
        items.append(item);
      }
      list.append(el("li", {}, `Wave ${index + 1}${wave.length > 1 ? " (parallel)" : ""}`, items));
    });
    section.append(list);
    page.progress.append(section);
  }

  task(id) {
    if (!this.tasks.has(id)) {
      const status = el("span", { class: "task-status waiting" }, "waiting");
      const item = this.line("", "task");
      item.append(status, " ", el("strong", {}, id));
      this.tasks.set(id, { item, status, early: true });
    }
    return this.tasks.get(id);
  }

  taskStart(data) {
    const { status } = this.task(data.task_id);
    status.textContent = "running";
    status.className = "task-status running";
  }

  taskEnd(data) {
    const { item, status, tool } = this.task(data.task_id);
    if (data.status !== "ok" && data.error) {
      this.failures.push(`${tool || data.task_id}: ${data.error.replace(TOOL_ERROR_PREFIX, "")}`);
    }
    status.textContent = `${data.status} in ${Number(data.seconds).toFixed(1)} s`;
    status.className = `task-status ${data.status === "ok" ? "ok" : "failed"}`;
    const detail = (data.error || data.output || "").slice(0, OUTPUT_CHARS);
    if (detail) item.append(el("span", { class: "output" }, detail));
  }

  /** The Writer's first turn is the short answer, its next the cited explanation. */
  token(data) {
    const id = data.message_id ?? "";
    if (!this.texts.has(id)) {
      this.messages.push(id);
      this.texts.set(id, "");
    }
    this.texts.set(id, this.texts.get(id) + data.text);
    const target = this.messages.indexOf(id) === 0 ? page.short : page.answer;
    target.textContent = decodeEntities(this.texts.get(id));
  }
}

function clearAnswer() {
  for (const node of [page.short, page.answer, page.gaps, page.sources, page.progress, page.pauseBody]) {
    node.replaceChildren();
  }
  page.sourcesTitle.hidden = true;
  page.pause.hidden = true;
}

/** The answer text with each ``[n]`` a link to its source (the page itself, or the source's entry). */
function citedText(text, sources) {
  const numbers = new Map(sources.map((source) => [source.n, source]));
  const paragraph = el("p");
  for (const part of text.split(/(\[\d+\])/)) {
    const n = /^\[(\d+)\]$/.exec(part) && Number(part.slice(1, -1));
    const source = n && numbers.get(n);
    if (!source) {
      paragraph.append(part);
      continue;
    }
    const web = webAddress(source.source);
    paragraph.append(el("a", {
      class: "cite", href: web || `#source-${n}`, title: source.title,
      ...(web ? { target: "_blank", rel: "noopener noreferrer" } : {}),
    }, part));
  }
  return paragraph;
}

/** The answer, its sources and its gaps; ``failures`` (failed tasks) explain an answer without sources. */
function showAnswer(answer, failures = []) {
  page.short.textContent = answer.short || "";
  page.answer.replaceChildren(citedText(answer.text || "", answer.sources || []));
  page.sources.replaceChildren();
  for (const source of answer.sources || []) {
    const web = webAddress(source.source);
    const link = el("a", {
      href: web || `#source-${source.n}`,
      ...(web ? { target: "_blank", rel: "noopener noreferrer" } : {}),
    }, source.title || source.source);
    const note = source.kind === "model" ? " (model knowledge, not a retrieved source)" : "";
    const parts = [link, el("span", { class: "source" }, ` ${source.source}${note}`)];
    if (source.published) {
      parts.push(el("time", {
        class: "published", "data-testid": "published",
        datetime: /^\d{4}-\d{2}-\d{2}$/.test(source.published) ? source.published : undefined,
      }, ` · published ${source.published}`));
    }
    page.sources.append(el("li", { id: `source-${source.n}`, value: source.n }, ...parts));
  }
  page.sourcesTitle.hidden = !answer.sources?.length;
  page.gaps.replaceChildren(...(answer.missing || []).map((gap) => el("li", {}, `Not found: ${gap}`)));
  if (!answer.sources?.length) {
    page.gaps.append(...failures.map((failure) => el("li", { class: "error" }, `No sources: ${failure}`)));
  }
  if (answer.basis === "model_knowledge" && !answer.sources?.length) {
    page.gaps.append(el("li", {}, "Answered from the model's own knowledge; no sources were consulted."));
  }
}

/** A paused run's request as a form: a clarification to answer, or a plan to approve, edit or reject. */
function showPause(request) {
  const body = [];
  if (request.error) body.push(el("p", { class: "error", role: "alert" }, request.error));
  if (request.kind === "clarification") {
    const input = el("input", { id: "clarify-answer", name: "answer", autocomplete: "off" });
    const form = el("form", { class: "pause-form" },
      el("p", {}, request.question),
      el("label", { for: "clarify-answer" }, "Your answer"), input,
      el("button", { type: "submit" }, "Continue"));
    form.addEventListener("submit", (event) => { event.preventDefault(); resume(input.value); });
    body.push(form);
  } else if (request.kind === "plan_review") {
    const tasks = request.plan?.tasks || [];
    const reason = el("input", { id: "reject-reason", autocomplete: "off" });
    const edited = el("textarea", { id: "plan-json", rows: 8, spellcheck: "false" },
      JSON.stringify({ tasks }, null, 2));
    const approve = el("button", { type: "submit" }, "Approve and run");
    const reject = el("button", { type: "button" }, "Reject");
    const edit = el("button", { type: "button" }, "Run the edited plan");
    const form = el("form", { class: "pause-form", "aria-label": "Plan review" },
      el("p", {}, `The plan for “${request.query}”:`),
      el("ol", { class: "review-tasks" },
        ...tasks.map((task) => el("li", {}, el("strong", {}, task.id), `: ${task.goal} `,
          el("span", { class: "tool" }, `(${task.tool || "model"})`)))),
      approve,
      el("div", { class: "row" }, el("label", { for: "reject-reason" }, "Reason to reject (optional)"), reason, reject),
      el("details", {}, el("summary", {}, "Edit the plan"),
        el("label", { for: "plan-json" }, "Tasks (JSON)"), edited, edit));
    form.addEventListener("submit", (event) => { event.preventDefault(); resume("approve"); });
    reject.addEventListener("click", () => resume({ action: "reject", reason: reason.value.trim() }));
    edit.addEventListener("click", () => {
      try {
        resume({ action: "edit", plan: JSON.parse(edited.value) });
      } catch (error) {
        setStatus(`The edited plan is not JSON: ${error.message}`, "error");
      }
    });
    body.push(form);
  } else {
    body.push(el("p", {}, `The run waits for a request this page does not know (${request.kind}).`));
  }
  page.pauseBody.replaceChildren(...body);
  page.pause.hidden = false;
  page.pause.querySelector("input, button")?.focus();
}

/** POST ``body`` to a streaming route and show what comes back; true when the stream ran. */
async function stream(path, body) {
  session.controller?.abort();
  const controller = new AbortController();
  session.controller = controller;
  setBusy(true);
  setStatus("Working…");
  const view = new RunView();
  try {
    const response = await fetch(path, { method: "POST", headers: headers(), body: JSON.stringify(body), signal: controller.signal });
    if (!response.ok) {
      const message = await failure(response);
      return { status: response.status, message };
    }
    let count = 0;
    let failed = null;
    for await (const { event, data } of serverSentEvents(response)) {
      if (++count > MAX_EVENTS) throw new Error(`more than ${MAX_EVENTS} events`);
      if (event === "metadata") {
        session.thread = data.thread_id;
        sessionStorage.setItem(THREAD_KEY, data.thread_id);
      } else if (event === "data") {
        view.handle(data);
      } else if (event === "error") {
        failed = data.message;
      } else if (event === "end") {
        break;
      }
    }
    if (failed) setStatus(failed, "error");
    else setStatus(view.paused ? "The run is paused: answer the form above." : "Done.");
    return { status: 200 };
  } catch (error) {
    if (error.name === "AbortError") setStatus("Stopped.");
    else setStatus(`The connection to the server failed (${error.message}).`, "error");
    return { status: 0 };
  } finally {
    if (session.controller === controller) {
      session.controller = null;
      setBusy(false);
    }
    showHistory();
  }
}

function runConfig() {
  const configurable = {};
  if (page.clarify.checked) configurable.clarify = true;
  if (page.reviewPlan.checked) configurable.review_plan = true;
  return { configurable };
}

/** Ask ``query``: on this conversation's thread when there is one (a new thread when it is gone). */
async function search(query) {
  clearAnswer();
  page.question.textContent = query;
  const config = runConfig();
  session.configurable = config.configurable;
  const body = { input: { query }, config };
  let result = session.thread
    ? await stream(`/conversations/${encodeURIComponent(session.thread)}/stream`, body)
    : await stream("/stream", body);
  if (result.status === 404 && session.thread) {
    forgetThread();
    result = await stream("/stream", body);
  }
  if (result.message) setStatus(result.message, "error");
}

async function resume(reply) {
  page.pause.hidden = true;
  page.pauseBody.replaceChildren();
  const body = { resume: reply, config: { configurable: session.configurable } };
  const result = await stream(`/conversations/${encodeURIComponent(session.thread)}/resume/stream`, body);
  if (result.message) setStatus(result.message, "error");
}

/** The questions asked so far on this conversation's thread, read from the server. */
async function showHistory() {
  if (!session.thread) return;
  try {
    const response = await fetch(`/conversations/${encodeURIComponent(session.thread)}/state`, { headers: headers() });
    if (!response.ok) return;
    const state = await response.json();
    const asked = (state.values?.messages || []).filter((m) => m.type === "human" && typeof m.content === "string");
    page.history.replaceChildren(...asked.map((m) => el("li", {}, m.content)));
  } catch {
    // the list is a convenience: the answer is shown either way
  }
}

function forgetThread() {
  session.thread = null;
  sessionStorage.removeItem(THREAD_KEY);
  page.history.replaceChildren();
}

function shareableAddress(query) {
  const url = new URL(window.location.href);
  url.search = new URLSearchParams({ q: query }).toString();
  url.hash = "";
  return url.href;
}

page.form.addEventListener("submit", (event) => {
  event.preventDefault();
  const query = page.query.value.trim();
  if (!query || session.controller) return;
  window.history.pushState({ q: query }, "", shareableAddress(query));
  search(query);
});
page.stop.addEventListener("click", () => session.controller?.abort());
page.newThread.addEventListener("click", () => {
  forgetThread();
  clearAnswer();
  page.question.textContent = "";
  setStatus("A new conversation starts with the next question.");
  window.history.pushState({}, "", "/");
  page.query.value = "";
  page.query.focus();
});
page.token.value = sessionStorage.getItem(TOKEN_KEY) || "";
page.token.addEventListener("input", () => sessionStorage.setItem(TOKEN_KEY, page.token.value.trim()));
window.addEventListener("popstate", () => {
  page.query.value = new URLSearchParams(window.location.search).get("q") || "";
});

const shared = new URLSearchParams(window.location.search).get("q")?.trim();
if (shared) {
  forgetThread(); // a shared search starts its own conversation
  page.query.value = shared;
  search(shared);
} else {
  showHistory();
}
