"""LangSmith without a network: a client whose transport is a local sink, and questions as examples.

``aevaluate`` traces the target itself even with ``upload_results=False``, so an evaluation that
must stay offline needs a client that never opens a socket (the qa test checks none is opened).
"""

from __future__ import annotations

import uuid
from typing import Any

import requests
from langsmith import Client
from langsmith.schemas import Example

NAMESPACE = uuid.UUID("6f1c2d1e-0c55-4a53-9d7e-2f1bd0a6c1aa")


class DiscardingAdapter(requests.adapters.BaseAdapter):
    """A transport that answers every LangSmith request with an empty 200, locally, with no I/O."""

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: dict[str, str] | None = None,
    ) -> requests.Response:
        """Drop the request; reply ``{}``."""
        response = requests.Response()
        response.status_code = 200
        response._content = b"{}"
        response.headers["Content-Type"] = "application/json"
        response.request, response.url = request, request.url or ""
        return response

    def close(self) -> None:
        """Nothing to close."""


def offline_client() -> Client:
    """A LangSmith client that never opens a socket.

    ``aevaluate`` traces the target itself even with ``upload_results=False`` (it forces
    ``tracing_context(enabled=True)`` around it), so the client's transport is a local sink.
    """
    client = Client(api_url="http://127.0.0.1:9", api_key="offline", info={}, auto_batch_tracing=False)
    for prefix in ("http://", "https://"):  # after construction: the client mounts its own adapters
        client.session.mount(prefix, DiscardingAdapter())
    return client


def to_example(question: dict[str, Any], dataset_id: uuid.UUID) -> Example:
    """A LangSmith example: the question as input, the gold answer and expectations as reference."""
    return Example(
        id=uuid.uuid5(NAMESPACE, question["id"]),
        dataset_id=dataset_id,
        inputs={"id": question["id"], "question": question["question"]},
        outputs={key: question.get(key) for key in ("answer", "supporting_titles", "type", "expected_route")},
    )
