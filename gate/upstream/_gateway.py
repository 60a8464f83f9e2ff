"""A Messages-compatible LLM gateway (``[agent] upstream = "gateway"``): the Messages API's
routes and answers at a base URL the team runs (``GATE_GATEWAY_URL``), authenticated by a
bearer token (``GATE_GATEWAY_TOKEN``, sent as ``Authorization: Bearer``). The agent reaches the
meter as it would reach the gateway: ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_AUTH_TOKEN`` (the
run's token; Claude Code and the SDKs send it as a bearer token).

Both variables live in the environment, never in ``gate.toml``: a pull request that could
name the URL could send the gate's token wherever it liked. Requests are priced by the price
table (the Anthropic list prices): a gateway that charges otherwise says so in
``[agent.prices]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gate.errors import BadInput, Unmeasurable
from gate.upstream._anthropic import (
    BASE_URL_ENV,
    BEARER_HEADER,
    TOKEN_ENV,
    MessagesUpstream,
    check_base_url,
    key_signer,
)
from gate.upstream._contract import SIMULATOR, CISetup, Endpoint, register_upstream

URL_ENV = "GATE_GATEWAY_URL"
GATEWAY_TOKEN_ENV = "GATE_GATEWAY_TOKEN"


class Gateway(MessagesUpstream):
    name = "gateway"
    provider = "gateway"
    credential_env = (GATEWAY_TOKEN_ENV,)
    credential_setup = (f"set it, with {URL_ENV}, in the gate step's env (`{GATEWAY_TOKEN_ENV}: "
                        f"${{{{ secrets.{GATEWAY_TOKEN_ENV} }}}}`)")
    ci = CISetup(
        needs=(f"# Needs the repository variable {URL_ENV} (the gateway's base URL) and the "
               f"repository", f"# secret {GATEWAY_TOKEN_ENV} (its bearer token), which the "
               "gate step's env passes on.",),
        adopt=f"Add the repository variable {URL_ENV} (the gateway's base URL) and the "
              f"repository\n     secret {GATEWAY_TOKEN_ENV} (Settings → Secrets and variables "
              "→ Actions)",
        step_env=(f"{URL_ENV}: ${{{{ vars.{URL_ENV} }}}}",
                  f"{GATEWAY_TOKEN_ENV}: ${{{{ secrets.{GATEWAY_TOKEN_ENV} }}}}"))

    def missing(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """The gateway's URL and its token, each when unset."""
        return tuple(n for n in (URL_ENV, GATEWAY_TOKEN_ENV) if not environ.get(n, "").strip())

    def open(self, environ: Mapping[str, str]) -> Endpoint:
        url = environ.get(URL_ENV, "").strip()
        if not url:
            raise BadInput(f'gate.toml [agent] upstream = "gateway": {URL_ENV} is not set in '
                           "the environment (the gateway's base URL, http[s]://host[:port])")
        base = check_base_url(url, URL_ENV)
        token = environ.get(GATEWAY_TOKEN_ENV, "").strip()
        if not token:
            raise Unmeasurable(f'[agent] upstream = "gateway": no {GATEWAY_TOKEN_ENV} in the '
                               "environment (the gateway's bearer token): set it, or pass "
                               "--sim (GATE_SIM=1) to run against the built-in simulator")
        return Endpoint(self, base, None, key_signer(token, BEARER_HEADER), "gateway")

    def simulated(self, base_url: str, credential: str) -> Endpoint:
        return Endpoint(self, base_url.rstrip("/"), None, key_signer(credential, BEARER_HEADER),
                        SIMULATOR)

    def simulator_refusal(self, header: Callable[[str], str], credential: str | None
                          ) -> str | None:
        """A gateway takes its bearer token only (an API key's header is no credential of
        its)."""
        auth = header(BEARER_HEADER)
        if not auth.lower().startswith("bearer ") or not auth[7:].strip():
            return "Authorization: Bearer <token> is required (the gateway's)"
        if credential is not None and auth[7:].strip() != credential:
            return "invalid bearer token (the gateway's)"
        return None

    def pricing(self, region: str | None, model_id: str | None = None) -> str:
        return "anthropic"  # the price table's list prices, as the direct API's

    def agent_env(self, base_url: str, token: str) -> dict[str, str]:
        """As a client reaches a gateway: its base URL and a bearer token (the run's)."""
        return {BASE_URL_ENV: base_url, TOKEN_ENV: token}


GATEWAY = register_upstream(Gateway())
