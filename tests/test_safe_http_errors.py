"""The web fetcher's error text when httpx gives an error without a message (a timeout often does)."""

from __future__ import annotations

import httpx
import pytest

from tools.web.safe_http import AddressGuard, FetchFailed, SafeFetcher


def _failing(error: httpx.HTTPError) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_an_error_without_a_message_says_there_was_no_answer() -> None:
    fetcher = SafeFetcher(AddressGuard())
    async with _failing(httpx.ReadTimeout("")) as client:
        with pytest.raises(FetchFailed, match=r"ReadTimeout: no answer$"):
            await fetcher._send(client, httpx.URL("http://example.org/"), "93.184.215.14")


async def test_an_error_with_a_message_keeps_it() -> None:
    fetcher = SafeFetcher(AddressGuard())
    async with _failing(httpx.ConnectError("connection refused")) as client:
        with pytest.raises(FetchFailed, match=r"ConnectError: connection refused$"):
            await fetcher._send(client, httpx.URL("http://example.org/"), "93.184.215.14")


async def test_a_download_that_breaks_off_without_a_message_says_so() -> None:
    fetcher = SafeFetcher(AddressGuard())

    class Broken(httpx.AsyncByteStream):
        async def __aiter__(self):  # noqa: ANN204 - an async generator
            raise httpx.ReadError("")
            yield b""

    response = httpx.Response(200, headers={"content-type": "text/html"}, stream=Broken())
    with pytest.raises(FetchFailed, match=r"ReadError: the download broke off$"):
        await fetcher._read(httpx.URL("http://example.org/"), response)
