"""The tamper rule (gate/sandbox/_tamper.py), table-tested: which changes count, what the
package manager's record exempts, what a new file shadows, the probe's output read back."""

from __future__ import annotations

import pytest

from gate.sandbox._tamper import (
    Answers,
    Change,
    Flag,
    Found,
    World,
    aliases,
    bundle_derived,
    candidates,
    digests_needed,
    leaves,
    mounted_changes,
    questions,
    record_of,
    since,
    verdict,
)

WORLD = World.of("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
BASH_MD5 = "a" * 32
#: dpkg's database in a Debian image with a merged /usr (dpkg lists /bin/bash, the engine
#: names /usr/bin/bash): /var/lib/dpkg/info's files by name, and the status file's conffiles
INFO = {
    "bash.list": "/.\n/bin\n/bin/bash\n",
    "bash.md5sums": f"{BASH_MD5}  bin/bash\n",
    "bash-static.list": "/usr/sbin/bash\n",
    "bash-static.md5sums": f"{BASH_MD5}  usr/sbin/bash\n",
    "python3.11.list": "/usr/bin/python3.11\n",
    "python3-minimal.list": "/usr/bin/python3\n",
    "curl.list": "/usr/bin/curl\n",
    "nodejs.list": "/usr/bin/nodejs\n",
    "libc6:amd64.list": "/lib/x86_64-linux-gnu/libc.so.6\n",
    "libc6:amd64.md5sums": f"{'c' * 32}  lib/x86_64-linux-gnu/libc.so.6\n"
                           f"{'d' * 32}  lib/x86_64-linux-gnu/libc.so.6.old\n",
    "apt.list": "/etc/apt/apt.conf.d/01autoremove\n",
    "apt.conffiles": "/etc/apt/apt.conf.d/01autoremove\n",
}
STATUS = f"""Package: apt
Conffiles:
 /etc/apt/apt.conf.d/01autoremove {'e' * 32}
 /etc/apt/apt.conf.d/02gone {'e' * 32} obsolete
Description: commandline package manager
"""


def _p(kind: str, path: str, md5: str | None = None,
       real: str | None = None) -> tuple[str, Found]:
    return path, Found(kind, md5, real or (path if kind != "-" else None))


def _answers(*found: tuple[str, Found]) -> Answers:
    seen = dict(found)
    wanted = {*seen, *(f.real for f in seen.values() if f.real)}
    return Answers(seen, record_of(INFO, STATUS, wanted))


def _judge(change: Change, *found: tuple[str, Found], bundle_ok: bool = False) -> list[str]:
    return [str(f) for f in verdict(candidates([change], WORLD), _answers(*found), WORLD,
                                    bundle_ok=bundle_ok)]


CASES = [
    # (what, change, the probe's P lines, flagged)
    ("bash as its package has it", Change("C", "/usr/bin/bash"),
     [_p("f", "/usr/bin/bash", BASH_MD5)], []),
    ("bash wrapped", Change("C", "/usr/bin/bash"),
     [_p("f", "/usr/bin/bash", "b" * 32)], ["/usr/bin/bash changed"]),
    ("a command replaced by a folder's worth of nothing: a FIFO", Change("C", "/usr/bin/bash"),
     [_p("o", "/usr/bin/bash")], ["/usr/bin/bash changed"]),
    ("a packaged command deleted", Change("D", "/usr/bin/curl"), [_p("-", "/usr/bin/curl")],
     ["/usr/bin/curl deleted"]),
    ("npm install -g: a new command that shadows none", Change("A", "/usr/local/bin/claude"),
     [_p("l", "/usr/local/bin/claude", real="/usr/local/lib/node_modules/x/cli.js"),
      _p("-", "/usr/bin/claude")], []),
    ("a new command shadowing a later one", Change("A", "/usr/local/bin/python3"),
     [_p("f", "/usr/local/bin/python3", "f" * 32),
      _p("l", "/usr/bin/python3", real="/usr/bin/python3.11")],
     ["/usr/local/bin/python3 added, shadowing /usr/bin/python3"]),
    ("a package's new command before another's", Change("A", "/usr/sbin/bash"),
     [_p("f", "/usr/sbin/bash", BASH_MD5), _p("f", "/usr/bin/bash", "b" * 32)], []),
    ("a new command in /usr/bin is /bin's own name, not a shadow", Change("A", "/usr/bin/node"),
     [_p("l", "/usr/bin/node", real="/usr/bin/nodejs"),
      _p("l", "/bin/node", real="/usr/bin/nodejs")], []),
    ("a new library before the packaged one", Change("A", "/usr/local/lib/libc.so.6"),
     [_p("f", "/usr/local/lib/libc.so.6", "9" * 32),
      _p("f", "/usr/lib/x86_64-linux-gnu/libc.so.6", "c" * 32)],
     ["/usr/local/lib/libc.so.6 added, shadowing /usr/lib/x86_64-linux-gnu/libc.so.6"]),
    ("a packaged library upgraded by apt", Change("C", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
     [_p("f", "/usr/lib/x86_64-linux-gnu/libc.so.6", "c" * 32)], []),
    ("a packaged library patched", Change("C", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
     [_p("f", "/usr/lib/x86_64-linux-gnu/libc.so.6", "d" * 32)],
     ["/usr/lib/x86_64-linux-gnu/libc.so.6 changed"]),
    ("a .pth hook", Change("A", "/usr/lib/python3/dist-packages/zz.pth"),
     [_p("f", "/usr/lib/python3/dist-packages/zz.pth", "1" * 32)],
     ["/usr/lib/python3/dist-packages/zz.pth added"]),
    ("a sitecustomize in pip's site-packages",
     Change("A", "/usr/local/lib/python3.13/site-packages/sitecustomize.py"),
     [_p("f", "/usr/local/lib/python3.13/site-packages/sitecustomize.py", "1" * 32)],
     ["/usr/local/lib/python3.13/site-packages/sitecustomize.py added"]),
    ("Python's own bytecode of the packaged sitecustomize",
     Change("A", "/usr/lib/python3.11/__pycache__/sitecustomize.cpython-311.pyc"), [], []),
    ("pip install: a new package", Change("A", "/usr/local/lib/python3.13/site-packages/x/a.py"),
     [], []),
    ("pip install --upgrade: a package's file changed",
     Change("C", "/usr/local/lib/python3.13/site-packages/numpy/core.py"),
     [_p("f", "/usr/local/lib/python3.13/site-packages/numpy/core.py", "2" * 32)], []),
    ("npm's global packages updated",
     Change("C", "/usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js"),
     [_p("f", "/usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js", "2" * 32)], []),
    ("pip uninstall", Change("D", "/usr/local/lib/python3.13/site-packages/numpy/core.py"),
     [_p("-", "/usr/local/lib/python3.13/site-packages/numpy/core.py")], []),
    ("the interpreter's standard library patched", Change("C", "/usr/local/lib/python3.13/os.py"),
     [_p("f", "/usr/local/lib/python3.13/os.py", "3" * 32)],
     ["/usr/local/lib/python3.13/os.py changed"]),
    ("ldconfig's cache", Change("C", "/etc/ld.so.cache"), [_p("f", "/etc/ld.so.cache", "4" * 32)],
     []),
    ("a preloaded library", Change("A", "/etc/ld.so.preload"),
     [_p("f", "/etc/ld.so.preload", "4" * 32)], ["/etc/ld.so.preload added"]),
    ("apt's conffile as packaged", Change("C", "/etc/apt/apt.conf.d/01autoremove"),
     [_p("f", "/etc/apt/apt.conf.d/01autoremove", "e" * 32)], []),
    ("apt's conffile edited", Change("C", "/etc/apt/apt.conf.d/01autoremove"),
     [_p("f", "/etc/apt/apt.conf.d/01autoremove", "5" * 32)],
     ["/etc/apt/apt.conf.d/01autoremove changed"]),
    ("an obsolete conffile's record exempts nothing", Change("C", "/etc/apt/apt.conf.d/02gone"),
     [_p("f", "/etc/apt/apt.conf.d/02gone", "e" * 32)], ["/etc/apt/apt.conf.d/02gone changed"]),
    ("a new apt hook", Change("A", "/etc/apt/apt.conf.d/99hook"),
     [_p("f", "/etc/apt/apt.conf.d/99hook", "6" * 32)], ["/etc/apt/apt.conf.d/99hook added"]),
    ("pip's configuration", Change("A", "/etc/pip.conf"), [_p("f", "/etc/pip.conf", "6" * 32)],
     ["/etc/pip.conf added"]),
    ("uv's configuration", Change("A", "/root/.config/uv/uv.toml"),
     [_p("f", "/root/.config/uv/uv.toml", "6" * 32)], ["/root/.config/uv/uv.toml added"]),
    ("a command in root's ~/.local/bin", Change("A", "/root/.local/bin/uv"),
     [_p("f", "/root/.local/bin/uv", "7" * 32)], ["/root/.local/bin/uv added"]),
    ("update-ca-certificates' link to a packaged certificate", Change("A", "/etc/ssl/certs/X.pem"),
     [_p("l", "/etc/ssl/certs/X.pem", real="/usr/share/ca-certificates/mozilla/X.crt")], []),
    ("a link to a certificate elsewhere", Change("A", "/etc/ssl/certs/evil.pem"),
     [_p("l", "/etc/ssl/certs/evil.pem", real="/tmp/evil.pem")],
     ["/etc/ssl/certs/evil.pem added"]),
    ("a local CA certificate", Change("A", "/usr/local/share/ca-certificates/evil.crt"),
     [_p("f", "/usr/local/share/ca-certificates/evil.crt", "8" * 32)],
     ["/usr/local/share/ca-certificates/evil.crt added"]),
    ("update-alternatives' link to a packaged command", Change("A", "/etc/alternatives/js"),
     [_p("l", "/etc/alternatives/js", real="/usr/bin/nodejs")], []),
    ("an alternative pointed at a file no package has", Change("C", "/etc/alternatives/python"),
     [_p("l", "/etc/alternatives/python", real="/opt/fake-python")],
     ["/etc/alternatives/python changed"]),
    ("a folder's own entry", Change("C", "/usr/bin"), [_p("d", "/usr/bin")], []),
    ("the task's own files", Change("A", "/app/x.pth"), [], []),
    ("name resolution", Change("C", "/etc/nsswitch.conf"),
     [_p("f", "/etc/nsswitch.conf", "9" * 32)], ["/etc/nsswitch.conf changed"]),
    ("Python's own start-up hook", Change("C", "/etc/python3.11/sitecustomize.py"),
     [_p("f", "/etc/python3.11/sitecustomize.py", "9" * 32)],
     ["/etc/python3.11/sitecustomize.py changed"]),
]


@pytest.mark.parametrize(("what", "change", "found", "flagged"), CASES,
                         ids=[c[0] for c in CASES])
def test_the_rule(what: str, change: Change, found: list[str], flagged: list[str]) -> None:
    assert _judge(change, *found) == flagged, what


@pytest.mark.parametrize(("ok", "flagged"), [(True, []), (False, [
    "/etc/ssl/certs/ca-certificates.crt changed"])])
def test_the_ca_bundle_is_the_package_managers_when_it_is_derived(
        ok: bool, flagged: list[str]) -> None:
    path = "/etc/ssl/certs/ca-certificates.crt"
    assert _judge(Change("C", path), _p("f", path, "1" * 32), bundle_ok=ok) == flagged


CERT_A = "-----BEGIN CERTIFICATE-----\nAAAA\nBBBB\n-----END CERTIFICATE-----\n"
CERT_B = "-----BEGIN CERTIFICATE-----\nCCCC\n-----END CERTIFICATE-----"


def test_a_bundle_is_derived_when_each_certificate_is_a_ca_folders() -> None:
    assert bundle_derived(CERT_A + CERT_B + "\n", [CERT_A, CERT_B + "\r\n"])
    assert bundle_derived(CERT_A, [CERT_A, CERT_B])  # a certificate left out: still derived
    assert not bundle_derived(CERT_A + CERT_B, [CERT_A])  # one added by hand


def test_what_the_container_is_asked_and_the_aliases() -> None:
    cands = candidates([Change("A", "/usr/local/bin/pytest"), Change("C", "/usr/bin/bash"),
                        Change("A", "/app/out.txt")], WORLD)
    assert [c.path for c in cands] == ["/usr/local/bin/pytest", "/usr/bin/bash"]
    assert questions(cands, WORLD) == [
        "/usr/local/bin/pytest", "/usr/bin/bash", "/usr/sbin/pytest", "/usr/bin/pytest",
        "/sbin/pytest", "/bin/pytest"]
    assert aliases("/bin/bash") == ("/bin/bash", "/usr/bin/bash")
    assert aliases("/usr/lib/x.so") == ("/usr/lib/x.so", "/lib/x.so")
    assert aliases("/usr/local/bin/x") == ("/usr/local/bin/x",)
    assert aliases("/usr") == ("/usr",)


def test_an_image_path_comes_first_and_the_standard_ones_stay() -> None:
    world = World.of("/opt/venv/bin:/usr/bin")
    assert world.path_dirs[:2] == ("/opt/venv/bin", "/usr/bin")
    assert "/usr/local/bin" in world.path_dirs
    assert World.of(None).path_dirs[0] == "/usr/local/sbin"


def test_a_mark_keeps_what_was_so_and_a_new_change_of_it_flags() -> None:
    marked = [Flag("/root/.local/bin/uv", "added", "f:1")]  # the verifier's own install
    assert since([Flag("/root/.local/bin/uv", "added", "f:1")], marked) == []
    again = Flag("/root/.local/bin/uv", "added", "f:2")  # replaced by the next step's agent
    assert since([again], marked) == [again]
    assert mounted_changes({"/etc/hosts": "1 2"}, {"/etc/hosts": "3 4"})[0].path == "/etc/hosts"
    assert mounted_changes({"/etc/hosts": "1 2"}, {"/etc/hosts": "1 2"}) == []


def test_dpkgs_record_read_back() -> None:
    record = record_of(INFO, STATUS, [
        "/usr/bin/bash", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/etc/apt/apt.conf.d/02gone",
        "/etc/apt/apt.conf.d/01autoremove"])
    assert record.lists("/usr/bin/bash") and record.recorded("/usr/bin/bash") == BASH_MD5
    assert record.recorded("/usr/lib/x86_64-linux-gnu/libc.so.6") == "c" * 32
    assert record.recorded("/etc/apt/apt.conf.d/01autoremove") == "e" * 32
    assert record.recorded("/etc/apt/apt.conf.d/02gone") is None  # obsolete
    assert not record.lists("/usr/bin/curl")  # not asked: not read


def test_only_the_leaves_of_a_diff_are_asked_about() -> None:
    diff = [Change("C", "/usr"), Change("C", "/usr/bin"), Change("A", "/usr/bin/x"),
            Change("A", "/usr/bin x"), Change("A", "/usr/lib/python3/dist-packages/sitecustomize"),
            Change("A", "/usr/lib/python3/dist-packages/sitecustomize/__init__.py")]
    assert [c.path for c in leaves(diff)] == [
        "/usr/bin/x", "/usr/bin x", "/usr/lib/python3/dist-packages/sitecustomize/__init__.py"]
    # a hook package's module is a hook too
    assert [c.path for c in candidates(diff, WORLD)] == [
        "/usr/bin/x", "/usr/lib/python3/dist-packages/sitecustomize/__init__.py"]


def test_only_the_files_whose_md5_decides_are_read() -> None:
    changes = [Change("A", "/usr/local/bin/claude"), Change("A", "/usr/local/bin/python3"),
               Change("C", "/usr/bin/bash"), Change("A", "/etc/ld.so.preload"),
               Change("C", "/usr/local/lib/python3.13/site-packages/numpy/core.py")]
    answers = _answers(
        _p("f", "/usr/local/bin/claude"), _p("f", "/usr/local/bin/python3"),
        _p("l", "/usr/bin/python3", real="/usr/bin/python3.11"), _p("f", "/usr/bin/bash"),
        _p("f", "/etc/ld.so.preload"),
        _p("f", "/usr/local/lib/python3.13/site-packages/numpy/core.py"))
    assert digests_needed(candidates(changes, WORLD), answers, WORLD) == {
        "/usr/local/bin/python3", "/usr/bin/bash", "/etc/ld.so.preload"}
