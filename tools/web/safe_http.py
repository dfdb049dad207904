"""Fetching model-chosen URLs without reaching the machine's own network (SSRF).

Every hop of a fetch, the first request and each redirect alike, is checked before it is made:

1. the scheme is ``http`` or ``https``;
2. the host name is resolved (``getaddrinfo``: decimal, octal and hex IPv4 forms resolve too);
3. every address it resolves to must be public: loopback, private, link-local (the cloud metadata
   address ``169.254.169.254``), shared, reserved, multicast and unspecified addresses are refused,
   IPv4-mapped and NAT64 IPv6 forms by the IPv4 address they carry;
4. the request is sent to the checked address itself (the ``Host`` header and TLS SNI keep the
   name), so a DNS answer that changes between the check and the connection is never used.

A host (``intranet.example``) or host and port (``127.0.0.1:8888``) named in the allow list skips
step 3; that is how a self-hosted SearxNG or a test fixture on loopback is read.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urljoin

import anyio
import httpx

log = logging.getLogger(__name__)

MAX_REDIRECTS = 5
PAGE_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
USER_AGENT = "aisearch/0.1 (+https://github.com/; web page reader)"
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class FetchRefused(Exception):
    """The URL may not be fetched: a non-web scheme, or a host on a non-public address."""


class FetchFailed(Exception):
    """The page could not be fetched: network error, timeout, HTTP error, not a web page."""


@dataclass(frozen=True)
class Download:
    """A fetched page: where it ended up, its type and its (possibly cut) body."""

    url: str
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool


def why_blocked(address: IPAddress) -> str | None:
    """Why ``address`` is not a public internet address, or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        elif address in NAT64:
            address = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (cloud metadata lives there)"
    if address.is_private:
        return "a private address"
    if address.is_multicast or address.is_reserved or address.is_unspecified or not address.is_global:
        return "not a public address"
    return None


def host_port(url: httpx.URL) -> tuple[str, int]:
    """The host (ASCII, lower case, IPv6 without brackets) and the effective port of ``url``."""
    port = url.port or (443 if url.scheme == "https" else 80)
    return url.raw_host.decode("ascii").lower().rstrip("."), port


class AddressGuard:
    """Checks where a URL leads before anything is sent there."""

    def __init__(self, allow_hosts: Iterable[str] = ()) -> None:
        """``allow_hosts``: ``host`` or ``host:port`` entries (``[::1]:8080`` for IPv6 with a port)."""
        self.allow = {entry.strip().lower().rstrip(".") for entry in allow_hosts if entry.strip()}

    def allowed(self, host: str, port: int) -> bool:
        """Whether ``host`` (on ``port``) is in the allow list."""
        bracketed = f"[{host}]" if ":" in host else host
        return bool({host, bracketed, f"{bracketed}:{port}"} & self.allow)

    async def address(self, url: httpx.URL) -> str:
        """The checked address to connect to for ``url``.

        Raises:
            FetchRefused: A scheme other than http(s), no host, or a non-public address that the
                allow list does not name.
            FetchFailed: The name does not resolve.
        """
        if url.scheme not in ("http", "https"):
            raise FetchRefused(
                f"{url}: only http and https URLs are fetched, not {url.scheme or 'no'} scheme"
            )
        if not url.host:
            raise FetchRefused(f"{url}: no host")
        host, port = host_port(url)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise FetchFailed(f"{host}: the name does not resolve ({exc})") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise FetchFailed(f"{host}: the name does not resolve")
        if self.allowed(host, port):
            return addresses[0]
        for text in addresses:
            reason = why_blocked(ipaddress.ip_address(text.split("%", 1)[0]))
            if reason:
                shown = host if host == text else f"{host} ({text})"
                raise FetchRefused(
                    f"{shown} is {reason}: refused (add it to AISEARCH_WEB_ALLOW_HOSTS to allow it)"
                )
        return addresses[0]


class SafeFetcher:
    """GETs web pages through an :class:`AddressGuard`, with a size limit, a content-type check
    and a deadline for the whole fetch, redirects included."""

    def __init__(self, guard: AddressGuard, *, timeout_s: float = 10.0, max_bytes: int = 2_000_000) -> None:
        """Fetch within ``timeout_s`` per page (redirects included), reading at most ``max_bytes``."""
        self.guard = guard
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes

    async def get(self, url: str) -> Download:
        """Fetch ``url``, following up to five redirects, each checked like the first hop.

        Raises:
            FetchRefused: Where the URL (or a redirect) leads is not allowed.
            FetchFailed: Timeout, network or HTTP error, too many redirects, not a web page.
        """
        try:
            with anyio.fail_after(self.timeout_s):
                return await self._get(url)
        except TimeoutError:
            raise FetchFailed(f"{url}: no complete answer within {self.timeout_s:g} s") from None

    async def _get(self, url: str) -> Download:
        timeout = httpx.Timeout(self.timeout_s)
        async with httpx.AsyncClient(timeout=timeout, trust_env=False, follow_redirects=False) as client:
            for _ in range(MAX_REDIRECTS + 1):
                try:
                    target = httpx.URL(url)
                except httpx.InvalidURL as exc:
                    raise FetchRefused(f"{url!r} is not a valid URL ({exc})") from None
                address = await self.guard.address(target)
                response = await self._send(client, target, address)
                try:
                    if response.is_redirect and response.headers.get("location"):
                        url = urljoin(str(target), response.headers["location"])
                        log.info("redirect: %s -> %s", target, url)
                        continue
                    return await self._read(target, response)
                finally:
                    await response.aclose()
        raise FetchFailed(f"{url}: more than {MAX_REDIRECTS} redirects")

    async def _send(self, client: httpx.AsyncClient, target: httpx.URL, address: str) -> httpx.Response:
        host, port = host_port(target)
        default_port = port == (443 if target.scheme == "https" else 80)
        name = f"[{host}]" if ":" in host else host
        headers = {
            "Host": name if default_port else f"{name}:{port}",
            "User-Agent": USER_AGENT,
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9",
        }
        extensions = {"sni_hostname": host} if target.scheme == "https" else {}
        request = client.build_request(
            "GET", target.copy_with(host=address), headers=headers, extensions=extensions
        )
        try:
            return await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise FetchFailed(f"{target}: {type(exc).__name__}: {str(exc) or 'no answer'}") from None

    async def _read(self, target: httpx.URL, response: httpx.Response) -> Download:
        if response.status_code >= 400:
            raise FetchFailed(f"{target}: HTTP {response.status_code}")
        content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type and content_type not in PAGE_TYPES:
            raise FetchFailed(f"{target}: not a web page ({content_type})")
        body = bytearray()
        truncated = False
        try:
            async for block in response.aiter_bytes():
                body.extend(block)
                if len(body) > self.max_bytes:
                    del body[self.max_bytes :]
                    truncated = True
                    break
        except httpx.HTTPError as exc:
            raise FetchFailed(
                f"{target}: {type(exc).__name__}: {str(exc) or 'the download broke off'}"
            ) from None
        return Download(
            str(target), content_type or "text/html", response.charset_encoding, bytes(body), truncated
        )
