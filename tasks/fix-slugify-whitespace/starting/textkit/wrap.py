"""Shortening text for previews."""


def truncate(text: str, width: int, ellipsis: str = "...") -> str:
    """Cut ``text`` to at most ``width`` characters, ending with ``ellipsis`` if cut."""
    if width < len(ellipsis):
        raise ValueError("width is smaller than the ellipsis")
    if len(text) <= width:
        return text
    return text[: width - len(ellipsis)].rstrip() + ellipsis
