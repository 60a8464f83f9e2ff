"""The PR's system prompt (a Jinja2 template rendered in the gate's own process, next to the
meter and its key) gets the documented Jinja and nothing else: a template that reaches for
more is exit 2 naming the file before anything runs, even when the reach sits in a branch only
one task would take; the documented variables and conditionals still render."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gate.core.results import load_results
from tests.helpers.process import gate

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TASK = "fix-slugify-whitespace"  # a task of the bundled suite the simulator solves


def _repo(tmp: Path, template: str) -> Path:
    """A repository whose agent/system.md is ``template``, over the bundled tasks."""
    (tmp / "agent").mkdir(parents=True)
    (tmp / "agent" / "system.md").write_text(template)
    (tmp / "gate.toml").write_text(
        '[agent]\nkind = "builtin"\nmodel = "claude-sonnet-5-5"\n'
        'system_prompt = "agent/system.md"\nmax_turns = 10\n\n'
        f'[suite]\ntasks = "{REPO / "tasks"}"\nreplications = 1\njobs = 1\n')
    return tmp


def _payloads(side: Path) -> list[str]:
    run = f"__builtins__.__import__('os').system('touch {side}')"  # works with a plain Environment
    return [
        f"{{% set g = lipsum.__globals__ %}}{{{{ g.{run} }}}}",
        f"{{{{ cycler.__init__.__globals__.{run} }}}}",
        # only the one task would trip it, at run time, in the middle of the suite
        f'{{% if task_id == "{TASK}" %}}{{{{ joiner.__init__.__globals__.{run} }}}}'
        "{% endif %}",
        f'{{% if now > "2999" %}}{{{{ namespace.__init__.__globals__.{run} }}}}{{% endif %}}',
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        f"{{{{ self._TemplateReference__context.cycler.__init__.__globals__.{run} }}}}",
        "{{ task_id|attr('__class__') }}",
        "{{ '{0.__class__}'.format(task_id) }}",
        # no payload, but a render that would take the gate's memory (2**40 times the id)
        "{% set a = task_id ~ task_id %}" + "{% set a = a ~ a %}" * 40 + "{{ a|length }}",
    ]


@pytest.mark.parametrize("index", range(len(_payloads(Path()))))
def test_a_prompt_that_reaches_past_the_documented_jinja_is_exit_2_naming_the_file(
        tmp_path: Path, index: int) -> None:
    side = tmp_path / "pwned"
    repo = _repo(tmp_path / "repo", "You work in {{ workdir }}.\n" + _payloads(side)[index])
    p = gate("run", "--sim", "--task", TASK, "-o", str(tmp_path / "r.json"), cwd=repo)
    assert not side.exists()  # the payload never ran
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gate: error: agent/system.md:2: "), p.stderr
    assert "template error" in lines[0] and "Traceback" not in p.stderr
    assert not (tmp_path / "r.json").exists()  # nor did any run


def test_the_documented_variables_and_conditionals_still_render(tmp_path: Path) -> None:
    """Through the real CLI the prompt loads and the task runs; the agent's own rendering
    gives each variable its value."""
    template = ("Task {{ task_id }} in {{ workdir }} on {{ date }} ({{ now[:4] }}).\n"
                "{% if task_id.startswith('fix-') %}Fix it.{% elif task_id in ['a', 'b'] %}"
                "Pick.{% else %}Do it.{% endif %}\n"
                "{{ (workdir ~ '/src')|upper }} {{ date.split('-')[0]|int > 2000 }}\n")
    repo = _repo(tmp_path / "repo", template)
    out = tmp_path / "r.json"
    p = gate("run", "--sim", "--task", TASK, "-o", str(out), cwd=repo)
    assert p.returncode == 0, p.stderr
    assert [r.status for r in load_results(out).runs] == ["passed"]

    from gate.agents._builtin import BuiltinAgent

    agent = BuiltinAgent(model="claude-sonnet-5-5", system_template=template)
    ctx = SimpleNamespace(task=SimpleNamespace(id="fix-x"), skills=())
    text = agent._system(ctx, "/w")[0]["text"]  # type: ignore[arg-type]
    assert text.startswith("Task fix-x in /w on 20") and "Fix it.\n/W/SRC True\n" in text


@pytest.mark.parametrize("expression", ['task_id.split("-")[7]', "task_id < 3"])
def test_a_prompt_that_breaks_only_for_one_task_fails_that_run_never_as_infra(
        tmp_path: Path, expression: str) -> None:
    """Within the documented Jinja a template can still be wrong for one task (an index the
    task's id does not have, a string compared with a number): that run fails, with the
    reason; it never becomes an infra error that would drop the task's failures from the
    verdict."""
    template = f'Hi.{{% if task_id == "{TASK}" %}}{{{{ {expression} }}}}{{% endif %}}\n'
    repo = _repo(tmp_path / "repo", template)
    out = tmp_path / "r.json"
    p = gate("run", "--sim", "--task", TASK, "-o", str(out), cwd=repo)
    assert p.returncode == 0, p.stderr
    (run,) = load_results(out).runs
    assert run.status == "failed" and (run.reason or "").startswith(
        "system prompt: template error"), (run.status, run.reason)
