"""A Harbor-format task (instruction.md, task.toml, environment/, solution/, tests/) on the
offline base image."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.docker import IMAGE

DOCKERFILE = f"FROM {IMAGE}\nWORKDIR /app\nRUN printf 'a\\nb\\nc\\n' > /app/data.txt\n"
SOLVE = "#!/bin/bash\nwc -l < data.txt > count.txt\n"
TEST = """#!/bin/bash
if [ "$(cat /app/count.txt 2>/dev/null)" = "3" ]; then r=1; else r=0; fi
echo "$r" > /logs/verifier/reward.txt
"""
TOML = """version = "1.0"
[metadata]
difficulty = "easy"
category = "files"
tags = ["demo"]
author_name = "someone"
[verifier]
timeout_sec = 60.0
[agent]
timeout_sec = 60.0
[environment]
build_timeout_sec = 300.0
cpus = 1
memory_mb = 512
storage_mb = 1024
[environment.healthcheck]
command = "true"
"""


def harbor_task(root: Path, name: str, *, toml: str = TOML, dockerfile: str | None = DOCKERFILE,
                solve: str | None = SOLVE, test: str | None = TEST,
                instruction: str = "Write the number of lines of /app/data.txt into "
                                   "/app/count.txt.\n") -> Path:
    d = root / name
    files = {"instruction.md": instruction, "task.toml": toml,
             "environment/Dockerfile": dockerfile, "solution/solve.sh": solve,
             "tests/test.sh": test}
    for rel, body in files.items():
        if body is not None:
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(body)
    return d
