"""The runner's file commands and workflow commands: outputs, step summary, annotations, masks.

Outputs use the heredoc form with a random delimiter: a value with a newline in it (a headline,
a path) can then never end the value early or declare another output. Workflow commands
(``::error::``) are escaped as the runner expects, so a message cannot inject a command.
Outside Actions (no ``GITHUB_OUTPUT``), outputs are collected but written nowhere.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

# The runner refuses a step summary over 1 MiB; stay under it.
MAX_SUMMARY = 1024 * 1024 - 1024


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


class ActionsIO:
    """Writes what a step reports back to the runner."""

    def __init__(self, output: Path | None, step_summary: Path | None,
                 stream: TextIO | None = None,
                 redact: Callable[[str], str] = lambda s: s) -> None:
        self.output = output
        self.step_summary = step_summary
        self._stream = stream
        self._redact = redact
        self.outputs: dict[str, str] = {}

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stdout

    def command(self, name: str, message: str, **props: str) -> None:
        """``::name prop=v::message`` on stdout (where the runner reads workflow commands)."""
        args = ",".join(f"{k}={_escape_property(v)}" for k, v in props.items() if v)
        head = f"::{name} {args}::" if args else f"::{name}::"
        self.stream.write(head + _escape_data(message) + "\n")
        self.stream.flush()

    def add_mask(self, value: str) -> None:
        # Not redacted, by design: the runner must see the value to mask it in later lines.
        if value:
            self.stream.write(f"::add-mask::{_escape_data(value)}\n")
            self.stream.flush()

    def error(self, message: str, title: str = "") -> None:
        self.command("error", self._redact(message), title=title)

    def warning(self, message: str, title: str = "") -> None:
        self.command("warning", self._redact(message), title=title)

    def notice(self, message: str, title: str = "") -> None:
        self.command("notice", self._redact(message), title=title)

    def set_outputs(self, values: Mapping[str, object]) -> None:
        """Record outputs; ``None`` becomes the empty string, numbers their plain ``str``."""
        lines: list[str] = []
        for name, value in values.items():
            text = self._redact("" if value is None else str(value))
            self.outputs[name] = text
            delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
            while delimiter in text:  # practically never; but never let a value end itself
                delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
            lines.append(f"{name}<<{delimiter}\n{text}\n{delimiter}\n")
        if self.output is not None:
            with self.output.open("a", encoding="utf-8") as fh:
                fh.write("".join(lines))

    def summary(self, markdown: str) -> None:
        """Append to the job's step summary (the same report the PR comment shows)."""
        if self.step_summary is None:
            return
        text = self._redact(markdown)
        if len(text.encode("utf-8")) > MAX_SUMMARY:
            text = text.encode("utf-8")[:MAX_SUMMARY].decode("utf-8", "ignore") \
                + "\n\n… cut to fit the step summary limit.\n"
        with self.step_summary.open("a", encoding="utf-8") as fh:
            fh.write(text.rstrip("\n") + "\n\n")
