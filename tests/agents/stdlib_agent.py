"""A command agent with nothing but the standard library (for images without the SDK).

The same environment contract as ``sdk_agent.py``. With ``PROBES`` set (``host:port,...``) it
first tries to open each address and to reach another run's meter path through its own base
URL, and reports every attempt on stderr as ``PROBE <what> reached|failed``.
"""

import json
import os
import socket
import subprocess
import urllib.error
import urllib.request

base = os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
headers = {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01",
           "content-type": "application/json"}


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)


for target in filter(None, os.environ.get("PROBES", "").split(",")):
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        print(f"PROBE {target} reached", file=__import__("sys").stderr)
    except OSError:
        print(f"PROBE {target} failed", file=__import__("sys").stderr)
if os.environ.get("PROBES"):
    other = base.rsplit("/r/", 1)[0] + "/r/another-run-0000"
    try:
        post(other + "/v1/messages", {"model": "claude-sonnet-5-5", "max_tokens": 5,
                                      "messages": [{"role": "user", "content": "hi"}]})
        print("PROBE other-run reached", file=__import__("sys").stderr)
    except (urllib.error.URLError, OSError):
        print("PROBE other-run failed", file=__import__("sys").stderr)

with open(os.environ["GATE_PROMPT_FILE"]) as fh:
    prompt = fh.read()
tools = [{"name": "bash", "description": "run a shell command",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                           "required": ["command"]}}]
messages = [{"role": "user", "content": prompt}]
final = ""
for _ in range(20):
    msg = post(base + "/v1/messages", {"model": os.environ.get("ANTHROPIC_MODEL",
                                                               "claude-sonnet-5-5"),
                                       "max_tokens": 2048, "tools": tools,
                                       "messages": messages})
    content = msg["content"]
    messages.append({"role": "assistant", "content": content})
    final = "\n".join(b["text"] for b in content if b["type"] == "text") or final
    uses = [b for b in content if b["type"] == "tool_use"]
    if not uses:
        break
    results = []
    for u in uses:
        p = subprocess.run(["bash", "-c", u["input"]["command"]], capture_output=True, text=True)
        results.append({"type": "tool_result", "tool_use_id": u["id"],
                        "content": (p.stdout + p.stderr)[-10000:] or "(no output)"})
    messages.append({"role": "user", "content": results})
print(final)
