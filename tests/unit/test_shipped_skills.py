"""A task's own skills, read as a skill-loading agent reads them (gate.core.skills.shipped_skills):
SkillsBench ships skills whose front matter names them otherwise than their folder, names
them outside the Agent Skills rules, or has no front matter at all. None is dropped silently."""

from __future__ import annotations

from pathlib import Path

from gate.core.tasks import load_task

SHIPPED = {
    # SkillsBench dialogue-parser: a folder outside the rules, a valid name
    "dialogue_graph": "---\nname: dialogue-graph\ndescription: Build dialogue graphs.\n---\n",
    # multilingual-video-dubbing: a name that is a title
    "ffmpeg-media-info": "---\nname: FFmpeg Media Info\ndescription: Probe media.\n---\n",
    # xlsx-recover-data: no front matter
    "data-reconciliation": "# Data Reconciliation\n\nRecover missing values\nfrom totals.\n",
    # mario-coin-counting: the folder's own name, with an underscore
    "image_editing": "---\nname: image_editing\ndescription: Edit images.\n---\n",
    "bad yaml": "---\nname: [x\n---\n",
}


def test_shipped_skills_are_read_as_the_agent_reads_them(tmp_path: Path) -> None:
    from gate.core.skills import shipped_skills

    task_dir = tmp_path / "t"
    files = {"instruction.md": "x\n", "tests/test.sh": "true\n",
             "environment/Dockerfile": "FROM scratch\nCOPY skills /root/.claude/skills\n",
             **{f"environment/skills/{d}/SKILL.md": body for d, body in SHIPPED.items()}}
    for rel, body in files.items():
        (task_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (task_dir / rel).write_text(body)
    skills, notes = shipped_skills(load_task(task_dir))
    got = {s.folder: (s.name, s.description) for s in skills}
    assert got == {
        "dialogue_graph": ("dialogue-graph", "Build dialogue graphs."),
        "ffmpeg-media-info": ("ffmpeg-media-info", "Probe media."),
        "data-reconciliation": ("data-reconciliation", "Recover missing values from totals."),
        "image_editing": ("image_editing", "Edit images."),
    }
    assert [s.workspace_path for s in skills if s.folder == "dialogue_graph"] == [
        ".claude/skills/dialogue_graph/SKILL.md"]
    assert len(notes) == 3, notes
    assert notes[0].startswith("gate: skill environment/skills/bad yaml not honoured (")
    assert "not valid YAML" in notes[0]
    assert notes[1].startswith("gate: skill environment/skills/dialogue_graph is named "
                               "'dialogue-graph' (not its folder's name)")
    assert notes[2].endswith("named 'FFmpeg Media Info' (not its folder's name): honoured as "
                             "its folder, ffmpeg-media-info/, where the agent loads it, by the "
                             "name 'ffmpeg-media-info'")
