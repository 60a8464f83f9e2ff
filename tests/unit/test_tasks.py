from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.core.tasks import load_suite
from gate.errors import BadInput
from gate.sandbox import LocalSandboxProvider


def test_swe_lite_layout_loads(make_task, suite_dir: Path) -> None:
    make_task("fix-bug", setup="echo 'print(1)' > app.py\n",
              toml='difficulty = "easy"\ncategory = "bugfix"\ntags = ["python"]\n'
                   "max_turns = 7\nverify_timeout = 5\n")
    suite = load_suite(suite_dir)
    (task,) = suite.tasks
    assert task.id == "fix-bug"
    assert task.setup_script is not None and task.starting_dir is None
    assert task.difficulty == "easy" and task.meta.category == "bugfix"
    assert task.meta.max_turns == 7 and task.verify_timeout() == 5
    assert task.task_timeout() == 600
    assert task.solution_script is not None
    assert task.digest.startswith("sha256:")


def test_effectiveness_layout_loads(make_task, suite_dir: Path) -> None:
    meta = {"id": "ctx-1", "slug": "needle", "target_skill": "grep", "irrelevant_skill": "x",
            "category": "context", "difficulty": "medium", "notes": ""}
    make_task("needle", starting={"log.txt": "a\nb\n"},
              extra={"metadata.json": json.dumps(meta), "README.md": "# needle\n"})
    (task,) = load_suite(suite_dir).tasks
    assert task.starting_dir is not None and task.setup_script is None
    assert task.difficulty == "medium"  # from metadata.json when task.toml is absent
    assert task.metadata["slug"] == "needle"


def test_broken_tasks_reported_by_name_rest_still_loads(make_task, suite_dir: Path) -> None:
    make_task("good")
    (make_task("no-verify") / "verify.sh").unlink()
    (make_task("no-prompt") / "task.md").unlink()
    make_task("bad-toml", toml="difficulty = [unclosed\n")
    make_task("bad-field", toml='difficulty = "impossible"\n')
    suite = load_suite(suite_dir)
    assert [t.id for t in suite.tasks] == ["good"]
    reasons = {p.name: p.reason for p in suite.problems}
    assert reasons["no-verify"] == "missing verify.sh"
    assert reasons["no-prompt"] == "missing task.md"
    assert "task.toml is not valid TOML" in reasons["bad-toml"]
    assert "difficulty" in reasons["bad-field"]


def test_digest_changes_with_content_and_suite_digest_follows(make_task, suite_dir: Path) -> None:
    d = make_task("a")
    make_task("b")
    before = load_suite(suite_dir)
    (d / "verify.sh").write_text("exit 1\n")
    after = load_suite(suite_dir)
    assert before.get("a").digest != after.get("a").digest
    assert before.get("b").digest == after.get("b").digest
    assert before.digest != after.digest
    assert load_suite(suite_dir).digest == after.digest  # stable


def test_selecting_unknown_task_is_bad_input(make_task, suite_dir: Path) -> None:
    make_task("a")
    assert [t.id for t in load_suite(suite_dir, ["a"]).tasks] == ["a"]
    with pytest.raises(BadInput, match="no task named nope"):
        load_suite(suite_dir, ["nope"])


def test_missing_suite_dir_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="not found"):
        load_suite(tmp_path / "absent")


PLAIN_FORMAT = '''
"""A format for the test: prompt.txt + check.sh, which passes when check.sh prints PASS."""
from pathlib import Path

from gate.formats import TaskFormat
from gate.core.tasks import Task, TaskMeta, digest_dir


class PlainFormat(TaskFormat):
    name = "plain"

    def detect(self, path: Path) -> bool:
        return (path / "prompt.txt").is_file()

    def load(self, path: Path, name: str) -> Task:
        box = "needs a box" if (path / "box").exists() else None  # the format's answer
        return Task(id=path.name, path=path.resolve(), prompt=(path / "prompt.txt").read_text(),
                    digest=digest_dir(path), meta=TaskMeta(), format_name=self.name,
                    verify_script=path.resolve() / "check.sh", container_need=box)

    def run_script(self, sandbox, rel, *, timeout):
        return sandbox.run_task_script(rel, timeout=timeout)

    def verify(self, sandbox, *, timeout, step=None):
        from gate.sandbox import Verification

        res = sandbox.run_task_script("check.sh", timeout=timeout)
        return Verification(res, passed="PASS" in res.stdout)


FORMAT = PlainFormat()
'''


def test_a_new_task_format_is_one_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gate import formats
    from gate.agents import AgentOutcome
    from gate.execution.runner import run_one

    (tmp_path / "plain_format.py").write_text(PLAIN_FORMAT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(formats.FORMATS, "plain", "plain_format")
    suite = tmp_path / "suite"
    for name, word in (("good", "PASS"), ("bad", "nope")):
        (suite / name).mkdir(parents=True)
        (suite / name / "prompt.txt").write_text("say it\n")
        (suite / name / "check.sh").write_text(f"echo {word}\n")
    loaded = load_suite(suite)
    assert [(t.id, t.layout) for t in loaded.tasks] == [("bad", "plain"), ("good", "plain")]

    class Idle:
        kind = "idle"

        def run(self, sandbox: object, ctx: object) -> AgentOutcome:
            return AgentOutcome(final_message="")

    runs = {t.id: run_one(t, 0, Idle()).status for t in loaded.tasks}  # type: ignore[arg-type]
    assert runs == {"good": "passed", "bad": "failed"}
    # what depends on the format is its answer, in the task it loaded: nothing else is told
    (suite / "good" / "box").write_text("")
    good = load_suite(suite, only=["good"]).tasks[0]
    assert good.verify_script == good.path / "check.sh"
    assert LocalSandboxProvider().refusal(good) == "needs a box"
