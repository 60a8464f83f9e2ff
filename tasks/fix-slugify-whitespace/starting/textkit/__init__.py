"""textkit: small text helpers."""

from textkit.slug import slugify
from textkit.wrap import truncate

__all__ = ["slugify", "truncate"]
