"""Faults and speed: the failures a real API produces, at configured rates, seeded."""

from __future__ import annotations

import random
from dataclasses import dataclass

from gate.errors import BadInput

FAULT_KINDS = ("429", "529", "500", "stream_error", "disconnect", "credit")


@dataclass(frozen=True)
class FaultConfig:
    """Per-request probabilities of each fault (their sum must be at most 1).

    ``stream_error`` sends ``event: error`` after HTTP 200 and ``message_start`` (streams only);
    ``disconnect`` closes the socket mid-response (mid-stream for streams, before any byte for
    JSON); ``credit`` answers as an account out of credit does (a 400 ``invalid_request_error``
    with the provider's message). ``retry_after`` is the ``retry-after`` header of a 429, in
    seconds.
    """

    rate_429: float = 0.0
    rate_529: float = 0.0
    rate_500: float = 0.0
    rate_stream_error: float = 0.0
    rate_disconnect: float = 0.0
    rate_credit: float = 0.0
    retry_after: float = 1.0

    def __post_init__(self) -> None:
        rates = self.rates()
        for kind, rate in rates.items():
            if not 0.0 <= rate <= 1.0:
                raise BadInput(f"fault rate {kind} must be between 0 and 1, got {rate}")
        if sum(rates.values()) > 1.0 + 1e-9:
            raise BadInput("fault rates add up to more than 1")
        if self.retry_after < 0:
            raise BadInput("retry-after must not be negative")

    def rates(self) -> dict[str, float]:
        return dict(zip(FAULT_KINDS, (self.rate_429, self.rate_529, self.rate_500,
                                      self.rate_stream_error, self.rate_disconnect,
                                      self.rate_credit), strict=True))

    def pick(self, seed: int, n: int, stream: bool) -> str | None:
        """The fault for the ``n``-th request, if any: one seeded draw over the rates."""
        u = random.Random(f"fault\0{seed}\0{n}").random()
        acc = 0.0
        for kind, rate in self.rates().items():
            acc += rate
            if u < acc:
                if kind == "stream_error" and not stream:
                    return None
                return kind
        return None


@dataclass(frozen=True)
class Latency:
    """Time before a response starts (``fixed_ms`` plus uniform ``[0, jitter_ms)``) and the
    speed output is produced at (``tokens_per_second``; None or 0 = instant)."""

    fixed_ms: float = 0.0
    jitter_ms: float = 0.0
    tokens_per_second: float | None = None

    def __post_init__(self) -> None:
        if self.fixed_ms < 0 or self.jitter_ms < 0:
            raise BadInput("latency and jitter must not be negative")
        if self.tokens_per_second is not None and self.tokens_per_second < 0:
            raise BadInput("tokens per second must not be negative")

    def first_byte_s(self, seed: int, n: int) -> float:
        jitter = random.Random(f"latency\0{seed}\0{n}").random() * self.jitter_ms
        return (self.fixed_ms + jitter) / 1000.0

    def tokens_s(self, tokens: int) -> float:
        return tokens / self.tokens_per_second if self.tokens_per_second else 0.0
