"""Keeping credentials away from everything the gate starts or writes.

Two tools: ``scrubbed_env`` builds the environment for task scripts and agent processes
(no credential of any kind), and ``Redactor`` masks known secret values, and every value of
a credential's shape, in text that is about to be stored (transcripts, reasons, logs,
comments).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping

from gate.upstream import credential_variables, provider_prefixes

# The one rule for "is this variable a credential", by its name or its value (credential_reason).
# By name: a word that carries one, or points a process at one (SSH_AUTH_SOCK, NPM_AUTH, GH_PAT);
# a name ending in PASS, DSN or _PWD (DB_PASS, SENTRY_DSN, DB_PWD; not the shell's PWD, OLDPWD).
_CREDENTIAL_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE)|(^|_)PAT(_|$)|"
    r"PASS$|DSN$|_PWD$", re.IGNORECASE)

# By value: tokens of a known shape anywhere in the value, by whose they are (each "a token").
# Anthropic's key stays here; the meter's provider table names the providers it meters.
_TOKENS = {
    "GitHub": r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",
    "Anthropic": r"sk-ant-[A-Za-z0-9_-]{8,}",
    "OpenAI": r"sk-(proj-)?[A-Za-z0-9_-]{32,}",
    "Slack": r"xox[abposr]-[A-Za-z0-9-]{8,}|xapp-[0-9]+-[A-Za-z0-9-]{8,}",
    "AWS access key": r"(AKIA|ASIA)[0-9A-Z]{16}",
    "GitLab": r"gl(pat|ptt|dt|rt|cbt|ft|soat)-[A-Za-z0-9_-]{16,}",
    "npm": r"npm_[A-Za-z0-9]{30,}",
    "Hugging Face": r"hf_[A-Za-z0-9]{30,}",
    # a secret or restricted key, live or test (a test key still reads the account's test
    # data); a publishable key (pk_) is public by design
    "Stripe": r"[sr]k_(live|test)_[A-Za-z0-9]{16,}",
    "PyPI": r"pypi-AgE[A-Za-z0-9_-]{40,}",
    "SendGrid": r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
    "Vault": r"hv[sbr]\.[A-Za-z0-9_-]{24,}",
}
# a word's start, also right after an escaped newline or tab (``\\nghp_…`` in a JSON line)
_START = r"(?:(?<=\\[nrt])|\b)"
_TOKEN = _START + "(" + "|".join(f"(?:{p})" for p in _TOKENS.values()) + r")\b"
# a URL's scheme, from its start only (a long word is not tried at each of its letters)
_SCHEME = r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://"
_PEM_END = r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"
#: ``(why, pattern)``: a value matching the pattern anywhere is a credential, for that reason.
#: A pattern's group ``secret`` is what stored text has masked (:func:`mask_credentials`);
#: without one, the whole match. The first that matches names the reason.
VALUE_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (why, re.compile(pattern, flags)) for why, pattern, flags in (
        # a cloud service account's key file (its JSON, the key in it; quoted in JSON too)
        ("a service account's key",
         r'"private_key\\*"\s*:\s*\\*"(?P<secret>(?:[^"\\]|\\+[^"\\])*)', 0),
        # a registry login in Docker's config.json (base64 of user:password, or a token)
        ("a registry login", r'"(auth|identitytoken|registrytoken)\\*"\s*:\s*\\*"'
                             r'(?P<secret>[A-Za-z0-9+/=._-]{8,})', re.IGNORECASE),
        # a PEM or OpenSSH private key: the block, or what is left of a cut one (its newlines
        # escaped too: a key inside JSON, or JSON inside JSON)
        ("a private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
                          r"(?:[A-Za-z0-9+/=:,\s]|\\+[nr]|-(?!----))*(?:" + _PEM_END + ")?", 0),
        # ... or its end alone (what kept an output's tail cut its head off: its last lines
        # are masked too, :func:`_key_tails`)
        ("a private key", _PEM_END, 0),
        ("a URL with a password",
         _SCHEME + r"[^/?#@\s:\"'\\]*:(?P<secret>[^/?#@\s\"'\\]+)@", re.IGNORECASE),
        # a token as the user and no password: a Sentry DSN's key (32 hex digits), an API key
        ("a URL with a token as its user",
         _SCHEME + r"(?P<secret>[^/?#@\s:\"'\\]{32,}):?@", re.IGNORECASE),
        # the URL is the credential: Slack, Discord, Teams, Google Chat
        ("a webhook's URL",
         r"://(hooks\.slack\.com/(services|workflows|triggers)/|(ptb\.|canary\.)?discord(app)?"
         r"\.com/api/webhooks/|[a-z0-9.-]*webhook\.office\.com/|outlook\.office\.com/webhook/|"
         r"chat\.googleapis\.com/v1/spaces/[^?\s]*\?[^#\s]*key=)(?P<secret>[^\s\"'<>\\]+)",
         re.IGNORECASE),
        # a query parameter that carries one (signed URLs)
        ("a URL with a credential in its query",
         r"[?&](access_token|api[_-]?key|apikey|key|token|secret|password|passwd|sig|signature|"
         r"x-amz-signature|x-goog-signature|auth)=(?P<secret>[^&#\s\"'\\]{8,})", re.IGNORECASE),
        # libpq's keyword form (host=db user=u password=secret), or any key=value list's
        # password; not a call's argument (f(password=pw))
        ("a connection string with a password",
         r"\bpassword\s*=\s*(?P<q>['\"]?)(?P<secret>[^\s;'\"(),\\]+)(?P=q)(?=[\s;&\"'\\]|$)",
         re.IGNORECASE),
        # a JSON web token: header, payload and signature
        ("a JSON web token",
         _START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}", 0),
        ("a token", _TOKEN, 0),
    ))


# The gate's and the CI's own prefixes, and those of the clients of every upstream the gate
# can forward to (gate/upstream: ``env_prefixes``, whichever a run uses): withheld without a
# note unless they hold a credential, and never passed (``[suite] pass_env`` refuses them)
OWN_PREFIXES = ("GITHUB_", "ACTIONS_", "INPUT_", "GATE_", *provider_prefixes())
# ... and the clouds' and other model providers' variables: never a task's either, credential
# or not (GITHUB_SHA is none, but nothing of the CI's is for the code under test)
_SECRET_PREFIXES = (*OWN_PREFIXES, "GH_", "AWS_", "AZURE_", "GOOGLE_", "GCP_", "OPENAI_")
#: every upstream's credential variables, whatever their prefix
_UPSTREAM_CREDENTIALS = frozenset(credential_variables())


def is_own(name: str) -> bool:
    """Whether ``name`` is the gate's, the CI's or an upstream's own (its prefix, or an
    upstream's credential variable: ``GOOGLE_APPLICATION_CREDENTIALS`` is the meter's key
    file): never passed to a task or an agent, whatever ``[suite] pass_env`` says."""
    return name.upper().startswith(OWN_PREFIXES) or name in _UPSTREAM_CREDENTIALS


# the proxy settings the gate's own git needs to reach origin (gate/_git.py)
PROXY_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
               "http_proxy", "https_proxy", "all_proxy", "no_proxy")


def credential_reason(name: str, value: str = "") -> str | None:
    """Why ``name=value`` is a credential — its name, a URL with a password, a webhook's URL, a
    token's shape — or None. The one rule: the scrub of every child's environment, the gate's
    own start (``hide_secrets_from_environ``) and the warning about an ancestor's environment
    all ask it."""
    if _CREDENTIAL_NAME.search(name):
        return "its name"
    if not value or len(value) < 8:
        return None
    return next((why for why, shape in VALUE_SHAPES if shape.search(value)), None)


def mask_credentials(text: str) -> str:
    """``text`` with every value of a credential's shape (:data:`VALUE_SHAPES`) replaced by
    ``[REDACTED]``: what the gate stores of a command's output, whoever's secret it quotes
    (an install script's error quoting a file it read: no variable of the gate holds it)."""
    text = _key_tails(text)
    for _, shape in VALUE_SHAPES:
        text = shape.sub(_masked, text)
    return text


_PEM_END_RE = re.compile(_PEM_END)
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_KEY_BODY_LIMIT = 16_384  # characters: a private key's PEM body is a few kB


def _key_tails(text: str) -> str:
    """Each private key's end whose start was cut off (an output's tail kept) masked with the
    key's lines before it (whole lines of base64, their breaks escaped too: a JSON line),
    found by walking back from the marker: one pass, however long a base64 text without one
    is. A key whose start is there is left whole to :data:`VALUE_SHAPES`."""
    out, last = [], 0
    for m in _PEM_END_RE.finditer(text):
        start = _body_start(text, m.start(), max(last, m.start() - _KEY_BODY_LIMIT))
        if re.search(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----",
                     text[max(last, start - 512):start]):
            continue  # the whole key is there (an encrypted one's headers too)
        out += [text[last:start], "[REDACTED]"]
        last = m.end()
    return "".join(out) + text[last:] if out else text


def _body_start(text: str, end: int, floor: int) -> int:
    """Where the whole lines of base64 just before ``end`` (a line's start) begin."""
    start = end
    while start > floor and (brk := _break_before(text, start)) is not None:
        run = brk
        while run > floor and text[run - 1] in _BASE64:
            run -= 1
        if text[run - 1:run] == "\\" and text[run:run + 1] in ("n", "r"):
            run += 1  # the line starts after an escaped break, which stays whole
        if run == brk or (run > floor and _break_before(text, run) is None):
            break  # no line, or not a whole one ("error: <base64>")
        start = run
    return start


def _break_before(text: str, i: int) -> int | None:
    """Where the line break just before ``i`` starts (``\\n``, ``\\r\\n``, or either escaped
    in a JSON string), or None."""
    for brk in ("\r\n", "\n", "\\r\\n", "\\n", "\r"):
        if text.endswith(brk, 0, i):
            return i - len(brk)
    return None


def _masked(m: re.Match[str]) -> str:
    if "secret" not in m.re.groupindex or m.start("secret") < 0:
        return "[REDACTED]"
    whole, start, end = m.group(0), m.start("secret") - m.start(), m.end("secret") - m.start()
    return whole[:start] + "[REDACTED]" + whole[end:]


def is_secret_name(name: str) -> bool:
    """Whether a variable of this name is withheld from every child whatever its value (a
    credential's name, or one of the gate's, the CI's or a provider's variables)."""
    return name.upper().startswith(_SECRET_PREFIXES) or name in _UPSTREAM_CREDENTIALS \
        or bool(_CREDENTIAL_NAME.search(name))


def _withheld_why(name: str, value: str) -> str | None:
    if name.upper().startswith(_SECRET_PREFIXES) or name in _UPSTREAM_CREDENTIALS:
        return "its name"
    return credential_reason(name, value)


def withheld(environ: Mapping[str, str] | None = None,
             pass_env: Iterable[str] = ()) -> dict[str, str]:
    """``name → why`` for every variable of ``environ`` a child does not get: a credential
    (:func:`credential_reason`), one of the gate's, the CI's or a provider's variables, or a
    copy of a withheld value under another name. ``pass_env`` (``[suite] pass_env``, the base
    branch's) lets a credential through on purpose, never one of the gate's own."""
    env = os.environ if environ is None else environ
    allowed = {n for n in pass_env if not is_own(n)}
    out = {k: why for k, v in env.items()
           if k not in allowed and (why := _withheld_why(k, v)) is not None}
    copies = {v for k, v in env.items() if len(v) >= 8 and credential_reason(k, v)}
    out.update({k: "a copy of a credential" for k, v in env.items()
                if k not in out and k not in allowed and v in copies})
    return out


def withheld_notes(environ: Mapping[str, str] | None = None,
                   pass_env: Iterable[str] = ()) -> list[str]:
    """``NAME (why)`` for each credential withheld from a child (and each copy of one): what a
    run's notes name. The gate's, the CI's and the providers' own variables are withheld
    without a note when they are no credential (``GITHUB_SHA``, ``AWS_REGION``), and the
    gate's own credentials too (an upstream's key, ``GITHUB_TOKEN``: never a task's)."""
    env = os.environ if environ is None else environ
    return [f"{k} ({why})" for k, why in sorted(withheld(env, pass_env).items())
            if not is_own(k)
            and (not k.upper().startswith(_SECRET_PREFIXES) or credential_reason(k, env[k]))]


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the withheld variables of ``environ`` (long enough to be worth masking)."""
    env = os.environ if environ is None else environ
    return [env[k] for k in withheld(env) if len(env[k]) >= 8]


def scrubbed_env(
    extra: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None,
    pass_env: Iterable[str] = (),
) -> dict[str, str]:
    """The gate's environment minus every variable :func:`withheld` names, plus ``extra``."""
    env = dict(os.environ if environ is None else environ)
    drop = withheld(env, pass_env)
    clean = {k: v for k, v in env.items() if k not in drop}
    clean.update(extra or {})
    return clean


class Redactor:
    """Replaces known secret values, and any value of a credential's shape
    (:func:`mask_credentials`), with ``[REDACTED]``."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        vals = sorted({v for v in values if v and len(v) >= 8}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in vals)) if vals else None

    @classmethod
    def from_environ(cls, extra: Iterable[str] = ()) -> Redactor:
        return cls([*secret_values(), *extra])

    def __call__(self, text: str) -> str:
        return mask_credentials(self._pattern.sub("[REDACTED]", text) if self._pattern
                                else text)

    def __repr__(self) -> str:  # never show the values
        return "Redactor(<hidden>)"


_FD_VAR = "_GATE_SECRETS_FD"
_handled = False  # this process already went through hide_secrets_from_environ
_PIPE_LIMIT = 60_000  # a pipe holds 64 KiB without a reader


def hide_secrets_from_environ(argv: list[str]) -> None:
    """Keep credentials out of ``/proc/<gate>/environ``.

    Scrubbing a child's environment is not enough: any process the gate starts can read its
    parent's *initial* environment from ``/proc/$PPID/environ``, and unsetting a variable does
    not erase that block. On Linux the gate overwrites the credentials' values in that block
    in place (``/proc/self/mem``), reads the block back to check, and drops them from the C
    environment; they then live only in this process's memory (``os.environ``), and the
    process is marked non-dumpable so other users' processes cannot read its memory. One
    interpreter start, not two.

    Where that is not possible (no ``/proc``, a kernel that refuses the write, macOS, whose
    ``ps -E`` reads a process's initial environment too), the gate re-executes itself once
    with the credentials removed from its environment and hands them over through an
    inherited pipe. Whoever starts the gate must not keep the secrets either: the action's
    step ``exec``s it, so no shell above it holds them.
    """
    global _handled
    if os.name != "posix" or _handled:  # `python -m gate` calls it before the CLI loads
        return
    _handled = True
    fd = os.environ.pop(_FD_VAR, None)
    if fd is not None:
        with contextlib.suppress(OSError, ValueError), os.fdopen(int(fd), "rb") as fh:
            handed = json.loads(fh.read() or b"{}")
            os.environ.update(handed)
            _out_of_c_environ(handed)
        _not_dumpable()
        return
    secrets = {k: os.environ[k] for k in withheld(os.environ)}
    if secrets and _scrub_in_place(set(secrets)):
        _out_of_c_environ(secrets)
        secrets = {}
    payload = json.dumps(secrets).encode() if secrets else b""
    if not secrets or len(payload) > _PIPE_LIMIT:
        _not_dumpable()
        return
    r, w = os.pipe()
    os.write(w, payload)
    os.close(w)
    os.set_inheritable(r, True)
    env = {k: v for k, v in os.environ.items() if k not in secrets}
    env[_FD_VAR] = str(r)
    sys.stdout.flush()
    sys.stderr.flush()
    # -P: `python -m` would otherwise put the working directory first on the import path, and
    # the working directory is the checkout under test (or a downloaded artifact): a `gate/`
    # folder there would run instead of the gate, holding the secrets.
    os.execve(sys.executable, [sys.executable, "-P", "-m", "gate", *argv], env)


def _out_of_c_environ(names: Iterable[str]) -> None:
    """``os.environ`` keeps them; a child started without an explicit environment (it inherits
    the C library's ``environ``, not ``os.environ``) gets none of them, not even empty."""
    for name in names:
        os.unsetenv(name)


def _scrub_in_place(names: set[str]) -> bool:
    """Overwrite the values of ``names`` with NULs in this process's initial environment block
    (the memory ``/proc/<pid>/environ`` shows: ``env_start..env_end`` of ``/proc/self/stat``),
    then read the block back: True only when none of them has a value there any more."""
    if not sys.platform.startswith("linux"):
        return False
    wanted = {os.fsencode(n) for n in names}
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2:].split()  # fields[0] is field 3 of proc(5)
        start, end = int(fields[47]), int(fields[48])  # env_start (50), env_end (51)
        if not 0 < start < end or end - start > 16 << 20:
            return False
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = bytearray(mem.read(end - start))
            if len(block) != end - start:
                return False
            pos = 0
            for entry in bytes(block).split(b"\0"):
                name, eq, value = entry.partition(b"=")
                if eq and name in wanted:
                    at = pos + len(name) + 1
                    block[at:at + len(value)] = bytes(len(value))
                pos += len(entry) + 1
            mem.seek(start)
            if mem.write(block) != len(block):
                return False
        with open("/proc/self/environ", "rb") as fh:
            after = fh.read()
    except (OSError, ValueError, IndexError):
        return False
    left = (entry.partition(b"=") for entry in after.split(b"\0"))
    return not any(name in wanted and value for name, _, value in left)


def become_subreaper() -> bool:
    """Make the gate a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): a process of a run
    that kills its launcher, ``setsid``s, leaves its cgroup and clears its environment is
    still re-parented to the gate, never to init, and ``gate.sandbox`` kills it when a command
    ends and before anything a task must not see (the refresh's push with the token). True
    when the kernel agreed."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    pr_set_child_subreaper = 36
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _not_dumpable() -> None:
    import ctypes  # here: a process that re-executes itself never needs it

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


def exposed_ancestors(environ: Mapping[str, str] | None = None, *,
                      pid: int | None = None) -> list[tuple[int, str, list[str]]]:
    """``(pid, command, names)`` for each ancestor of this process whose environment holds a
    credential this process can read — and so can every task the gate runs as the same user
    (``/proc/<pid>/environ`` is readable by its user). A credential: a value of 8+ characters
    that :func:`credential_reason` names (the rule the scrub of a child's environment uses),
    or a copy of one of ``environ``'s under any name. Linux only (elsewhere: ``[]``); the walk
    stops at init."""
    env = os.environ if environ is None else environ
    ours = {v for k, v in env.items() if len(v) >= 8 and credential_reason(k, v)}
    found: list[tuple[int, str, list[str]]] = []
    current = os.getpid() if pid is None else pid
    for _ in range(64):  # a bound, whatever /proc says
        try:
            with open(f"/proc/{current}/stat", "rb") as fh:
                stat = fh.read()
            current = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if current <= 1:
            break
        try:
            with open(f"/proc/{current}/environ", "rb") as fh:
                block = fh.read()
            with open(f"/proc/{current}/comm", "rb") as fh:
                comm = fh.read().decode(errors="replace").strip()
        except OSError:
            continue  # not readable by us: nor by a task running as us
        names = sorted({
            name for name, eq, value in (e.decode(errors="replace").partition("=")
                                         for e in block.split(b"\0"))
            if eq and (value in ours or (len(value) >= 8 and credential_reason(name, value)))})
        if names:
            found.append((current, comm, names))
    return found


def warn_exposed_ancestors(log: Callable[[str], None] | None = None) -> None:
    """Warn (one line on stderr, or ``log``) when a process above the gate holds a credential
    a task could read: the gate was started as a child of a shell that has it, not ``exec``'d
    (docs/security.md, "Calling `gate` from your own steps")."""
    for pid, comm, names in exposed_ancestors():
        shown = ", ".join(names[:12]) + (f" (+{len(names) - 12} more)" if len(names) > 12 else "")
        line = (f"gate: warning: {shown} {'is' if len(names) == 1 else 'are'} "
                f"in the environment of process {pid} ({_printable(comm)}) above the gate, "
                f"readable by every task at /proc/{pid}/environ: exec the gate from "
                "your step (`exec gate ci ...`) or keep credentials out of the calling shell "
                "(docs/security.md: Calling gate from your own steps)")
        if log is None:
            print(line, file=sys.stderr)
        else:
            log(line)


def _printable(text: str) -> str:
    """A process name as it may be shown on one line (no control characters)."""
    return "".join(c if c.isprintable() else "?" for c in text)[:32]
