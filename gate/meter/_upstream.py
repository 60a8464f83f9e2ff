"""How the meter reaches the upstream API: the environment's proxy and CA settings, read once,
and the response as the relay reads it, whichever client fetched it."""

from __future__ import annotations

import http.client
import os
import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import certifi
import requests
import urllib3
from requests.adapters import HTTPAdapter

from gate.meter._sse import _Broken

CONNECT_TIMEOUT_S = 10.0  # to reach the upstream; the answer may take the run's timeout


def upstream_settings(upstream: str) -> tuple[str | None, bool | str]:
    """(proxy URL or None, TLS verification: False, True for certifi's CAs, or a CA bundle
    file or directory) for ``upstream``, from the environment, read once as requests reads
    them (``HTTPS_PROXY``/``NO_PROXY``, ``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``)."""
    with requests.Session() as s:
        found = s.merge_environment_settings(upstream, {}, None, None, None)
        proxy: str | None = requests.utils.select_proxy(upstream, found["proxies"])
        verify: bool | str | None = found["verify"]
    return proxy or None, True if verify is None else verify


def _tls_context(verify: bool | str) -> ssl.SSLContext:
    if verify is False:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if isinstance(verify, str) and os.path.isdir(verify):
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify if isinstance(verify, str)
                                      else certifi.where())


def upstream_pool(proxy: str, verify: bool | str) -> urllib3.PoolManager:
    """Connections to the upstream through ``proxy`` (http, https or socks, with the
    credentials of its URL), as requests would make them."""
    tls: dict[str, Any] = {"cert_reqs": "CERT_NONE"} if verify is False else {
        "cert_reqs": "CERT_REQUIRED",
        ("ca_cert_dir" if isinstance(verify, str) and os.path.isdir(verify)
         else "ca_certs"): verify if isinstance(verify, str) else certifi.where()}
    manager: urllib3.PoolManager = HTTPAdapter().proxy_manager_for(proxy, **tls)
    return manager


# what reaching or reading the upstream can raise (urllib3's through a proxy; http.client's and
# the socket's directly)
_UPSTREAM_ERRORS = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)


@dataclass(frozen=True)
class _Answer:
    """The upstream's response as the relay reads it, whichever client fetched it."""

    status: int
    headers: Any  # ``get(name, default)`` and ``items()``: http.client's or urllib3's headers
    read: Callable[[], bytes]
    read1: Callable[[int], bytes]


def _chunks(up: _Answer) -> Iterator[bytes]:
    """Bytes as they arrive (no re-chunking to a fixed size, no decoding); a failure to read
    the upstream is ``_Broken`` (an ``OSError`` in the relay is the agent's side)."""
    while True:
        try:
            chunk = up.read1(65536)
        except _UPSTREAM_ERRORS as exc:
            raise _Broken(f"{type(exc).__name__}: {exc}") from exc
        if not chunk:
            return
        yield chunk
