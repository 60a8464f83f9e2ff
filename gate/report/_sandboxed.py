"""A page someone else wrote, published safely: a fork's HTML report on the Pages site.

In the two-workflow pattern the fork's run renders its own report, so the HTML the trusted
comment job receives is the fork's to write: it could hold any script, a ``<meta>`` refresh
to another site, or drop the report's Content-Security-Policy. Served as is from
``<owner>.github.io`` it would run there. So the comment job never publishes it as a page of
its own: it publishes this wrapper, which the gate writes, and the fork's page is only the
escaped text of an ``<iframe sandbox srcdoc>``:

- ``sandbox`` with no allowance: no script runs in it at all, it gets a unique opaque origin
  (no cookie, no storage, nothing of the site's), cannot navigate the top page, open a
  window or submit a form;
- the wrapper's own policy (inherited by a ``srcdoc`` document) loads nothing from anywhere
  (``default-src 'none'``; images only as ``data:``) and frames nothing but the inline
  document, so a refresh or a link inside cannot navigate the frame to another site either;
  the only styles it allows are its own and the report's stylesheet of this gate (by hash).

The report reads as it does from the artifact (its tables, plots and transcripts are HTML;
``<details>`` open without script) when the fork's run used this gate's stylesheet (else it
shows unstyled); only the sort and filter of its task table, which need its script, do not
work here.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib import resources

from markupsafe import escape

STYLE = ("html,body{margin:0;height:100%}"
         "iframe{border:0;width:100%;height:100%;display:block}")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


@cache
def _report_style() -> str:
    """The HTML report's own stylesheet (gate/templates/report.css), read without the
    renderer (which needs numpy: the comment job's install has none)."""
    return (resources.files("gate") / "templates" / "report.css").read_text(encoding="utf-8")


def sandboxed_page(untrusted_html: str, title: str) -> str:
    """The wrapper page: ``untrusted_html`` as the escaped ``srcdoc`` of a fully sandboxed
    frame, under a policy that runs no script and loads nothing."""
    policy = (f"default-src 'none'; style-src '{_sha256(STYLE)}' "
              f"'{_sha256(_report_style())}'; img-src data:; frame-src 'none'; "
              "base-uri 'none'; form-action 'none'")
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f'<iframe sandbox="" referrerpolicy="no-referrer" title="{escape(title)}" '
        f'srcdoc="{escape(untrusted_html)}"></iframe>\n</body>\n</html>\n')
