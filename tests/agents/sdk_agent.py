"""A minimal third-party agent for the `command` kind: the anthropic SDK and a bash tool.

It knows nothing of the gate beyond the environment contract: the prompt in
$GATE_PROMPT_FILE, the model API at $ANTHROPIC_BASE_URL with $ANTHROPIC_API_KEY.
With DUMP_ENV set it writes its whole environment to that file (for the secrecy test).
"""

import json
import os
import subprocess
import sys

import anthropic

if os.environ.get("DUMP_ENV"):
    with open(os.environ["DUMP_ENV"], "w") as fh:
        json.dump(dict(os.environ), fh)

with open(os.environ["GATE_PROMPT_FILE"]) as fh:
    prompt = fh.read()
assert sys.stdin.read() == prompt, "prompt on stdin differs from $GATE_PROMPT_FILE"
client = anthropic.Anthropic()  # ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY from the environment
tools = [{"name": "bash", "description": "run a shell command",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                           "required": ["command"]}}]
messages = [{"role": "user", "content": prompt}]
final = ""
for _ in range(int(os.environ.get("MAX_TURNS", "20"))):
    with client.messages.stream(model=os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-5-5"),
                                max_tokens=2048, tools=tools, messages=messages) as s:
        msg = s.get_final_message()
    content = [b.model_dump(exclude_none=True) for b in msg.content]
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
