"""When the Master sends a question to the web, and what it answers when the web is not there.

With web search configured (the ``websearch`` server is in the run), the web is searched first for

* a question about live or recent facts (``RECENT``: news, the latest release, prices, weather, "now")
  that the local documents do not cover, and
* a factual question the local documents do not answer: the document probe found nothing on its
  topic (below ``document_probe_floor``), or there are no documents.

Clock questions and calculations stay with their tools; open questions (advice, plans) keep the
Master's choice. Without web search, a question about the present that the documents do not cover
and no user-added server might answer ends with an answer that says the web is not configured,
never with a guess from the models' memory.
"""

from __future__ import annotations

from agents.answer_form import is_open_question
from agents.assessment import probe_covers, probe_on_topic
from core.settings import Settings
from tools.hub import ToolHub
from tools.question_forms import ARITHMETIC, CLOCK_QUESTION, RECENT
from tools.question_forms import COMPUTED_DIFFERENCE as COMPUTED
from tools.registry import BUNDLED_SERVERS, EAGER_SERVERS, WEBSEARCH

NO_WEB_ANSWER = (
    "This asks about the present or the recent past, and web search is not configured, so it is not "
    "answered from the models' memory, which may be out of date. Set AISEARCH_SEARXNG_URL (or a "
    "[websearch] table in the config file) to search the web."
)
NO_WEB_GAP = "current information from the web (web search is not configured)"


def web_configured(hub: ToolHub) -> bool:
    """Whether this run has the web search server."""
    return WEBSEARCH in hub.servers


def for_another_tool(query: str) -> bool:
    """Whether ``query`` is the clock's or a calculation's, not the web's."""
    return bool(CLOCK_QUESTION.search(query) or ARITHMETIC.search(query) or COMPUTED.search(query))


def asks_about_now(query: str) -> bool:
    """Whether ``query`` asks about live or recent facts that neither a clock nor a calculation answers."""
    return bool(RECENT.search(query)) and not for_another_tool(query)


def wants_web(query: str, similarity: float | None, settings: Settings, web: bool) -> bool:
    """Whether to search the web first for ``query``, given the document probe's best similarity
    (None: nothing was probed) and whether web search is configured (``web``)."""
    if not web or for_another_tool(query):
        return False
    return (asks_about_now(query) and not probe_covers(similarity, settings)) or (
        not probe_on_topic(similarity, settings) and not is_open_question(query)
    )


def lacks_the_web(hub: ToolHub, query: str, similarity: float | None, settings: Settings) -> bool:
    """Whether ``query`` asks about the present, which only the web could answer in this run: web
    search is not configured, the documents do not cover it, and no server beyond the bundled ones
    is there that might."""
    if web_configured(hub) or not asks_about_now(query):
        return False
    if probe_covers(similarity, settings):
        return False
    return set(hub.servers) <= {*BUNDLED_SERVERS, *EAGER_SERVERS}
