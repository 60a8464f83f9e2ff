#!/bin/sh
# Claude Code, pinned, for a command agent: `install = "install.sh"` in gate.toml's [agent]
# (docs/harbor-migration.md, step 5). The gate runs it as root in each task's image before the
# agent's runs, once per image within a job, with network, outside the agent's timeout; its text
# is part of the agent's fingerprint, so bumping VERSION is an agent change like any other.
set -eu
VERSION=2.1.197

if ! command -v npm >/dev/null 2>&1; then
  # node and npm from the image's own package mirror (its sources list, as the image has it)
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends nodejs npm ca-certificates >/dev/null
  elif command -v apk >/dev/null 2>&1; then
    apk add --no-cache nodejs npm ca-certificates
  elif command -v dnf >/dev/null 2>&1; then
    dnf install -y nodejs npm ca-certificates
  else
    echo "no npm in the image, and no apt-get, apk or dnf to install it with" >&2
    exit 1
  fi
fi
# from the npm registry npm is configured with (NPM_CONFIG_REGISTRY, the image's .npmrc)
npm install -g --no-fund --no-audit --loglevel=error "@anthropic-ai/claude-code@$VERSION"
claude --version
