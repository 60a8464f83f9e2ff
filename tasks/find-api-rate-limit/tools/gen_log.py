#!/usr/bin/env python3
"""Regenerate starting/logs/diagnostic.log deterministically (fixed seed, fixed clock).

    python3 tools/gen_log.py > starting/logs/diagnostic.log

The log has TOTAL lines. Exactly one line is the real setting, ``API_RATE_LIMIT=4375``, at
NEEDLE_LINE, inside a config-reload dump. Decoys: an old commented-out value, the burst and
window settings next to it, and a built-in default mentioned before the reload.
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta

TOTAL = 5000
NEEDLE_LINE = 3712  # 1-based
ANSWER = 4375
SEED = 20240514

rng = random.Random(SEED)
clock = datetime(2024, 5, 14, 6, 0, 0)

HOSTS = ["api-7f9c", "api-2b41", "worker-0", "worker-1", "edge-3"]
PATHS = ["/v2/orders", "/v2/orders/{id}", "/v2/customers/{id}", "/v2/search", "/healthz",
         "/v2/invoices", "/v2/carts/{id}/items", "/v2/auth/token", "/metrics", "/v2/products"]
METHODS = ["GET", "GET", "GET", "POST", "PUT", "DELETE"]
TABLES = ["orders", "customers", "invoices", "products", "sessions", "audit_log"]
QUEUES = ["emails", "webhooks", "reindex", "thumbnails"]
USERS = ["u_1042", "u_2219", "u_3001", "u_0457", "u_9983", "u_5120"]


def ts() -> str:
    global clock
    clock += timedelta(milliseconds=rng.randint(3, 900))
    return clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{clock.microsecond // 1000:03d}Z"


def num(lo: int, hi: int) -> int:
    while True:  # the answer's digits must appear only once in the whole log
        n = rng.randint(lo, hi)
        if str(ANSWER) not in str(n):
            return n


def hexid(bits: int) -> str:
    width = bits // 4
    while True:
        h = f"{rng.getrandbits(bits):0{width}x}"
        if str(ANSWER) not in h:
            return h


def ordinary() -> str:
    kind = rng.choices(
        ["http", "db", "cache", "queue", "auth", "gc", "health", "warn", "error", "trace"],
        weights=[34, 14, 10, 8, 6, 4, 6, 8, 3, 7])[0]
    host = rng.choice(HOSTS)
    if kind == "http":
        path = rng.choice(PATHS).replace("{id}", str(num(1000, 99999)))
        status = rng.choices([200, 201, 204, 304, 400, 404, 429, 500], [60, 8, 5, 6, 4, 6, 3, 1])[0]
        return (f"{ts()} INFO  http    [{host}] {rng.choice(METHODS)} {path} -> {status} "
                f"in {num(1, 1800)}ms req_id={hexid(40)}")
    if kind == "db":
        return (f"{ts()} DEBUG db      [{host}] query on {rng.choice(TABLES)} rows={num(0, 5000)} "
                f"took={num(1, 950)}ms pool_in_use={num(1, 20)}/20")
    if kind == "cache":
        return (f"{ts()} DEBUG cache   [{host}] hit_ratio={rng.uniform(0.6, 0.99):.3f} "
                f"keys={num(10000, 90000)} evicted={num(0, 300)}")
    if kind == "queue":
        return (f"{ts()} INFO  queue   [{host}] {rng.choice(QUEUES)}: depth={num(0, 900)} "
                f"processed={num(1, 400)} failed={num(0, 5)}")
    if kind == "auth":
        return (f"{ts()} INFO  auth    [{host}] token refreshed for {rng.choice(USERS)} "
                f"expires_in={num(300, 3600)}s")
    if kind == "gc":
        return (f"{ts()} DEBUG runtime [{host}] gc pause={rng.uniform(0.1, 40):.1f}ms "
                f"heap={num(120, 900)}MiB goroutines={num(40, 700)}")
    if kind == "health":
        return f"{ts()} INFO  health  [{host}] ok (uptime {num(100, 90000)}s, load {rng.uniform(0, 4):.2f})"
    if kind == "warn":
        return rng.choice([
            f"{ts()} WARN  http    [{host}] slow request {rng.choice(PATHS).replace('{id}', str(num(1000, 99999)))} took {num(2000, 9000)}ms",
            f"{ts()} WARN  db      [{host}] connection pool at {num(17, 20)}/20, waiting={num(1, 9)}",
            f"{ts()} WARN  ratelimit [{host}] client 10.0.{num(0, 9)}.{num(2, 250)} throttled (429), "
            f"retry_after={num(1, 30)}s",
            f"{ts()} WARN  queue   [{host}] {rng.choice(QUEUES)} retry #{num(1, 5)} for job {hexid(32)}",
        ])
    if kind == "error":
        return rng.choice([
            f"{ts()} ERROR http    [{host}] upstream timeout after {num(5000, 30000)}ms ({rng.choice(PATHS).replace('{id}', '*')})",
            f"{ts()} ERROR queue   [{host}] webhook delivery failed: HTTP 5{num(0, 4):02d} from partner endpoint",
            f"{ts()} ERROR db      [{host}] deadlock detected on {rng.choice(TABLES)}, transaction retried",
        ])
    return (f"{ts()} TRACE span    [{host}] trace={hexid(64)} "
            f"span={hexid(32)} dur={num(1, 400)}us")


def block_at(lineno: int) -> list[str] | None:
    """Fixed multi-line blocks at fixed places; None for an ordinary line."""
    if lineno == 1:
        return [
            f"{ts()} INFO  main    service starting (version 4.12.0, build 9f3e2a1)",
            f"{ts()} INFO  config  loading /etc/svc/api.env",
            "# --- /etc/svc/api.env (as loaded at startup) ---",
            "LOG_LEVEL=info",
            "DB_POOL_SIZE=20",
            "CACHE_TTL_SECONDS=300",
            "API_CLIENT_TIMEOUT_MS=2000",
            "# API_RATE_LIMIT=3000   (old value, commented out during the May migration)",
            "# --- end ---",
            f"{ts()} WARN  ratelimit API_RATE_LIMIT is not set; using the built-in default of "
            f"1000 requests/min until the config is reloaded",
        ]
    if lineno == 1840:
        return [
            f"{ts()} INFO  deploy  rolling restart of worker pool requested by ci-bot",
            f"{ts()} INFO  deploy  worker-0 drained ({num(10, 90)} in-flight jobs finished)",
            f"{ts()} INFO  deploy  worker-1 drained ({num(10, 90)} in-flight jobs finished)",
        ]
    if lineno == NEEDLE_LINE - 4:
        return [
            f"{ts()} INFO  config  SIGHUP received, reloading /etc/svc/api.env",
            "# --- /etc/svc/api.env (reloaded) ---",
            "API_CLIENT_TIMEOUT_MS=2500",
            "API_RATE_LIMIT_BURST=8750",
            f"API_RATE_LIMIT={ANSWER}",
            "API_RATE_LIMIT_WINDOW=60s",
            "# --- end ---",
            f"{ts()} INFO  config  reload complete: 4 settings changed, rate limiter reconfigured",
        ]
    return None


def main() -> None:
    lines: list[str] = []
    while len(lines) < TOTAL:
        block = block_at(len(lines) + 1)
        lines.extend(block if block is not None else [ordinary()])
    lines = lines[:TOTAL]
    assert lines[NEEDLE_LINE - 1] == f"API_RATE_LIMIT={ANSWER}", lines[NEEDLE_LINE - 1]
    text = "\n".join(lines) + "\n"
    assert text.count(str(ANSWER)) == 1
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
