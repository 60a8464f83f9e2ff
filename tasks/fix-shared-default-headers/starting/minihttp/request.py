"""An immutable-ish description of an HTTP request."""

from __future__ import annotations

from urllib.parse import urlencode


class Request:
    """A request to send: method, URL, headers and query parameters."""

    def __init__(self, url: str, method: str = "GET", headers: dict[str, str] = {},
                 params: dict[str, str] | None = None) -> None:
        self.url = url
        self.method = method.upper()
        self.headers = headers
        self.params = dict(params or {})

    def with_header(self, name: str, value: str) -> "Request":
        """Add a header and return the request, for chaining."""
        self.headers[name] = value
        return self

    def with_param(self, name: str, value: str) -> "Request":
        self.params[name] = value
        return self

    def full_url(self) -> str:
        if not self.params:
            return self.url
        sep = "&" if "?" in self.url else "?"
        return f"{self.url}{sep}{urlencode(sorted(self.params.items()))}"

    def __repr__(self) -> str:
        return f"Request({self.method} {self.full_url()})"
