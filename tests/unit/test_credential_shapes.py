"""One credential rule (``gate.secrets.credential_reason``), by name and by value, for every
child's environment (``scrubbed_env``), the run's notes (``withheld_notes``), compose's
``${VAR}`` and the text the gate stores (``Redactor``): a table of the shapes it knows, each
with a near miss it must let through (issue 38, item 6)."""

from __future__ import annotations

import json

import pytest

from gate.formats._compose import Refused, map_compose
from gate.secrets import Redactor, credential_reason, scrubbed_env, withheld_notes

_PEM = ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n"
        "VJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZH\n"
        "-----END PRIVATE KEY-----\n")
_SERVICE_ACCOUNT = json.dumps({
    "type": "service_account", "project_id": "demo", "private_key_id": "0123abcd",
    "private_key": _PEM, "client_email": "ci@demo.iam.gserviceaccount.com"})

#: (name, value, why, what must not survive in stored text): caught by its value alone
BY_VALUE = [
    ("CFG_PEM", _PEM, "a private key", "MIIEvQIBADANBgkq"),
    ("CFG_RSA", _PEM.replace(" PRIVATE", " RSA PRIVATE"), "a private key", "VJTUt9Us8cKj"),
    ("CFG_SSH", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE\n"
                "-----END OPENSSH PRIVATE KEY-----", "a private key", "b3BlbnNzaC1rZXkt"),
    ("CFG_JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
                "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", "a JSON web token",
     "SflKxwRJSMeKKF2QT4fw"),
    ("CFG_STRIPE", "sk_live_51Habcdefghijklmnopqrstuv", "a token", "51Habcdefghijklm"),
    ("CFG_STRIPE_R", "rk_live_51Habcdefghijklmnopqrstuv", "a token", "51Habcdefghijklm"),
    ("CFG_STRIPE_T", "sk_test_51Habcdefghijklmnopqrstuv", "a token", "51Habcdefghijklm"),
    ("CFG_PYPI", "pypi-AgEIcHlwaS5vcmcCJGUxMjM0NTY3LTg5YWItY2RlZi0wMTIzLTQ1Njc4OWFiY2RlZgAC",
     "a token", "CJGUxMjM0NTY3LTg5"),
    ("CFG_SENDGRID", "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",
     "a token", "TwL2iGABf9DHoTf"),
    ("CFG_VAULT", "hvs.CAESIJlWh2Fg6xZbq0nvYkT5eR3LmP1oD", "a token", "CAESIJlWh2Fg6x"),
    ("CFG_GITLAB", "glptt-0123456789abcdef0123456789abcdef01234567", "a token",
     "0123456789abcdef0123"),
    ("CFG_SLACK", "xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef", "a token",
     "abcdef0123456789abcdef"),
    ("CFG_LIBPQ", "host=db.internal user=app password=pq-Secret-9 dbname=app",
     "a connection string with a password", "pq-Secret-9"),
    ("CFG_SENTRY", "https://0123456789abcdef0123456789abcdef@o123.ingest.sentry.io/456",
     "a URL with a token as its user", "0123456789abcdef0123456789abcdef"),
    ("CFG_GCP", _SERVICE_ACCOUNT, "a service account's key", "MIIEvQIBADANBgkq"),
    ("CFG_DOCKER", '{"auths": {"registry.example": {"auth": "dXNlcjpyZWctU2VjcmV0LTc="}}}',
     "a registry login", "dXNlcjpyZWctU2VjcmV0LTc"),
    # the shapes known before, still known
    ("CFG_DB", "postgres://app:pw-Secret-1@db.internal:5432/app", "a URL with a password",
     "pw-Secret-1"),
    ("CFG_GH", "ghp_" + "a1B2c3D4e5" * 4, "a token", "a1B2c3D4e5a1B2"),
    ("CFG_ANT", "sk-ant-api03-abcdefghijklmnop", "a token", "abcdefghijklmnop"),
]

#: (name, value, why): caught by its name, whatever its value
BY_NAME = [
    ("DB_PASS", "plain-value-1", "its name"),
    ("SMTPPASS", "plain-value-2", "its name"),
    ("SENTRY_DSN", "plain-value-3", "its name"),
    ("DB_PWD", "plain-value-4", "its name"),
    # decided: withheld — it points a process at the user's SSH keys (ssh-add -L, signing)
    ("SSH_AUTH_SOCK", "/tmp/ssh-XXXX/agent.1234", "its name"),
]

#: near misses: neither name nor value is a credential's
NEAR_MISSES = [
    ("PWD", "/home/runner/work/project"),  # the shell's, not a password
    ("OLDPWD", "/home/runner/work"),
    ("DSN_TIMEOUT", "30-seconds"),  # DSN not at the end
    ("PASSES_WANTED", "three-of-them"),
    ("CFG_PUB", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n"
                "-----END PUBLIC KEY-----"),
    ("CFG_SSHPUB", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9 me@host"),
    ("CFG_CERT", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUF\n"
                 "-----END CERTIFICATE-----"),
    ("CFG_JWT2", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"),  # no signature
    ("CFG_STRIPE_PK", "pk_live_51Habcdefghijklmnopqrstuv"),  # publishable: public by design
    ("CFG_PYPI", "pypi-simple-mirror-index"),
    ("CFG_SG", "SG.example.internal"),
    ("CFG_VAULT", "hvs.config-file"),
    ("CFG_GITLAB", "glptt-abc123"),
    ("CFG_SLACK", "xapp-config-v2"),
    ("CFG_LIBPQ", "host=db.internal user=app dbname=app sslmode=require"),
    ("CFG_CALL", "connect(host, password=pw)"),  # a call's argument, not a DSN
    ("CFG_URL", "https://o123.ingest.sentry.io/api/456/envelope/"),  # a plain URL
    ("CFG_GIT", "https://git@github.com/org/repo.git"),  # a short user, no password
    ("CFG_SA", json.dumps({"type": "service_account", "client_email": "ci@demo.iam"})),
    ("CFG_DOCKER", '{"auths": {"registry.example": {}}, "credsStore": "desktop"}'),
]


@pytest.mark.parametrize(("name", "value", "why", "secret"), BY_VALUE,
                         ids=[row[0] + "-" + row[2] for row in BY_VALUE])
def test_a_credential_by_its_value(name: str, value: str, why: str, secret: str) -> None:
    assert credential_reason(name, value) == why
    _withheld_everywhere(name, value, why)
    stored = Redactor()(f"the install said: {value} (exit 1)")  # no variable holds it
    assert secret not in stored and "[REDACTED]" in stored, stored
    assert stored.startswith("the install said: ")
    quoted = Redactor()(json.dumps({"output": f"config:\n{value}\n"}))  # a transcript's line
    assert secret not in quoted, quoted
    json.loads(quoted)  # still JSON


@pytest.mark.parametrize(("name", "value", "why"), BY_NAME, ids=[row[0] for row in BY_NAME])
def test_a_credential_by_its_name(name: str, value: str, why: str) -> None:
    assert credential_reason(name, value) == why
    _withheld_everywhere(name, value, why)


@pytest.mark.parametrize(("name", "value"), NEAR_MISSES, ids=[row[0] for row in NEAR_MISSES])
def test_a_near_miss_passes(name: str, value: str) -> None:
    assert credential_reason(name, value) is None
    env = {"PATH": "/usr/bin", name: value}
    assert scrubbed_env(environ=env)[name] == value
    assert withheld_notes(env) == []
    assert Redactor()(value) == value  # stored text keeps it
    main = map_compose(_compose(name), cpus=1, memory_mb=512, task_env={}, environ=env)
    assert main.env == {"X": value}


def _withheld_everywhere(name: str, value: str, why: str) -> None:
    """The child's environment lacks it, the run's notes name it with why, compose's ``${VAR}``
    is refused naming it, and its value is masked in what the gate stores."""
    env = {"PATH": "/usr/bin", name: value}
    assert name not in scrubbed_env(environ=env)
    assert withheld_notes(env) == [f"{name} ({why})"]
    with pytest.raises(Refused, match=f"{name} \\({why}\\)"):
        map_compose(_compose(name), cpus=1, memory_mb=512, task_env={}, environ=env)
    assert Redactor([value])(f"<{value}>") == "<[REDACTED]>"


def _compose(name: str) -> dict[str, object]:
    return {"services": {"main": {"environment": {"X": f"${{{name}}}"}}}}


@pytest.mark.parametrize("text", ["m" * 200_000, "a." * 100_000, "ghp_" + "a" * 200_000 + "_",
                                  "http://" + "u" * 200_000, "password=" + "p" * 200_000 + "(",
                                  "-----BEGIN PRIVATE KEY-----" + "A" * 200_000 + "-" * 8],
                         ids=["word", "dots", "token", "url", "dsn", "pem"])
def test_masking_is_linear_in_the_texts_length(text: str) -> None:
    """Every transcript line and trace field passes the Redactor: a long tool output is masked
    in one pass, never tried at each of its characters (a scheme's pattern tried at every
    letter of a 100 kB word took minutes)."""
    import time

    start = time.process_time()
    Redactor(["some-known-secret"])(text)
    assert time.process_time() - start < 1.0


def test_a_keys_last_lines_are_masked_when_its_start_was_cut() -> None:
    """What keeps an output's tail (a failed install's last 15 lines) may cut a key's first
    line off: its last lines and end are still a key; the text around them is kept."""
    body = "\n".join(f"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAA{i:02d}" for i in range(5))
    tail = f"{body}\n-----END OPENSSH PRIVATE KEY-----\n"
    assert credential_reason("CFG_TAIL", tail) == "a private key"
    said = Redactor()(f"error: cannot read\n{tail}exit 5\n")
    assert said == "error: cannot read\n[REDACTED]\nexit 5\n", said
    line = Redactor()(json.dumps({"output": f"[cut]\r\n{tail}"}))
    assert "b3BlbnNzaC1rZXkt" not in line and json.loads(line)["output"].startswith("[cut]\r\n")
