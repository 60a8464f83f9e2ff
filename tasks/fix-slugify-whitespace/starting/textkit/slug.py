"""URL slugs from human titles."""

import re
import unicodedata

_NON_WORD = re.compile(r"[^a-z0-9]+")


def slugify(text: str, sep: str = "-") -> str:
    """Turn a title into a URL slug: ``"Hello, World!"`` -> ``"hello-world"``.

    Accents are folded to ASCII, everything else that is not a letter or digit
    collapses into a single ``sep``.
    """
    text = unicodedata.normalize("NFKD", text)
    text = text.encode("ascii", "ignore").decode("ascii").lower()
    return _NON_WORD.sub(sep, text)
