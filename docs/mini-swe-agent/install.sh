#!/bin/sh
# mini-swe-agent, pinned, for a command agent: `install = "install.sh"` in gate.toml's [agent]
# (docs/agents.md). The gate runs it as root in each task's image before the agent's runs, once
# per image within a job, with network, outside the agent's timeout; its text is part of the
# agent's fingerprint, so bumping VERSION is an agent change like any other.
#
# It makes a virtual environment at $PREFIX (default /opt/mini-swe-agent) with mini-swe-agent
# from the package index pip is configured with (PIP_INDEX_URL, the image's pip.conf), and
# puts `mini-gate` beside `mini` in $PREFIX/bin (linked into /usr/local/bin when PREFIX is the
# default): it runs `mini` on the gate's task, non-interactively, through the gate's meter.
set -eu
VERSION=2.4.6
PREFIX="${PREFIX:-/opt/mini-swe-agent}"

if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  # python3 with venv from the image's own package mirror (its sources list, as the image has it)
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends python3 python3-venv ca-certificates >/dev/null
  elif command -v apk >/dev/null 2>&1; then
    apk add --no-cache python3 py3-pip ca-certificates
  elif command -v dnf >/dev/null 2>&1; then
    dnf install -y python3 python3-pip ca-certificates
  else
    echo "no python3 with venv in the image, and no apt-get, apk or dnf to install it with" >&2
    exit 1
  fi
fi
python3 -m venv "$PREFIX"
# the system's CA store when there is one (a venv's pip trusts only its own bundle, which lacks
# a CA the image's owner added, e.g. a TLS-inspecting proxy's)
if [ -z "${PIP_CERT:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  export PIP_CERT=/etc/ssl/certs/ca-certificates.crt
fi
"$PREFIX/bin/pip" install --quiet --disable-pip-version-check --no-input \
  "mini-swe-agent==$VERSION"

sed "s|@BIN@|$PREFIX/bin|" > "$PREFIX/bin/mini-gate" <<'SH'
#!/bin/sh
# mini-swe-agent on the gate's task (docs/agents.md): the prompt from $GATE_PROMPT_FILE, the
# model anthropic/$ANTHROPIC_MODEL through litellm to $ANTHROPIC_BASE_URL (the gate's meter)
# with $ANTHROPIC_API_KEY (the run's token); no confirmation, no prompt at the end, no cost
# limit of its own (the gate's [agent] max_turns and the meter's caps bound the run), no
# network of its own (litellm's price map from its package, not fetched); three tries per
# request, not ten (a refusal at the meter's turn cap ends the run in seconds, not minutes of
# back-off). Extra arguments go
# to `mini` (e.g. -c mini.yaml -c agent.step_limit=30). The trajectory is written beside
# $GATE_FINAL_FILE; the last model message's text becomes the final message, and a last line
# of JSON sums what the trajectory says was used. It exits 1 when mini-swe-agent ended without
# submitting (a limit, repeated format errors, an error).
here="@BIN@"  # where install.sh put mini-swe-agent
traj="$(dirname "$GATE_FINAL_FILE")/mini-swe-agent.traj.json"
MSWEA_CONFIGURED=1 MSWEA_SILENT_STARTUP=1 MSWEA_COST_TRACKING=ignore_errors \
MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT=3 LITELLM_LOCAL_MODEL_COST_MAP=True \
  "$here/mini" --yolo --exit-immediately --cost-limit 0 \
  --model "anthropic/${ANTHROPIC_MODEL:?the gate sets ANTHROPIC_MODEL from [agent] model}" \
  --task "$(cat "$GATE_PROMPT_FILE")" --output "$traj" "$@" </dev/null
rc=$?
"$here/python" - "$traj" "$GATE_FINAL_FILE" "$rc" <<'PY'
import json, sys

traj, final, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    with open(traj, encoding="utf-8") as f:
        data = json.load(f)
except (OSError, ValueError) as exc:
    print(f"mini-gate: no trajectory from mini-swe-agent ({exc})", file=sys.stderr)
    sys.exit(rc or 1)
said = [m for m in data.get("messages", []) if m.get("role") == "assistant"]
last = said[-1].get("content") if said else ""
if isinstance(last, list):
    last = "\n".join(b.get("text", "") for b in last if isinstance(b, dict))
with open(final, "w", encoding="utf-8") as f:
    f.write(last or "")
# every billed answer: an assistant message's, or a format error's (kept on the error message)
keys = ("prompt_tokens", "completion_tokens", "cache_creation_input_tokens",
        "cache_read_input_tokens")
total = dict.fromkeys(keys, 0)
for m in data.get("messages", []):
    response = (m.get("extra") or {}).get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    for k in keys:
        total[k] += int((usage or {}).get(k) or 0)
info = data.get("info", {})
status = info.get("exit_status", "")
print(json.dumps({"mini_swe_agent": info.get("mini_version"), "exit_status": status,
                  "api_calls": info.get("model_stats", {}).get("api_calls"), "usage": total}))
if rc == 0 and status != "Submitted":
    print(f"mini-gate: mini-swe-agent ended without submitting: {status}", file=sys.stderr)
    rc = 1
sys.exit(rc)
PY
SH
chmod 755 "$PREFIX/bin/mini-gate"
if [ "$PREFIX" = /opt/mini-swe-agent ]; then
  ln -sf "$PREFIX/bin/mini-gate" /usr/local/bin/mini-gate
fi
MSWEA_SILENT_STARTUP=1 "$PREFIX/bin/mini" --help >/dev/null
echo "mini-swe-agent $VERSION in $PREFIX"
