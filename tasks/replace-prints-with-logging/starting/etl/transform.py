"""Clean rows and aggregate them per region."""

from __future__ import annotations


def clean(rows: list[dict[str, str]]) -> list[tuple[str, int]]:
    """(region, amount in cents) for valid rows; invalid rows are skipped."""
    out = []
    skipped = 0
    for row in rows:
        region = (row.get("region") or "").strip().lower()
        try:
            cents = round(float(row.get("amount") or "") * 100)
        except ValueError:
            cents = None
        if not region or cents is None:
            skipped += 1
            continue
        out.append((region, cents))
    if skipped:
        print(f"WARNING: transform: skipped {skipped} invalid row(s)")
    print(f"transform: {len(out)} clean rows")
    return out


def totals(pairs: list[tuple[str, int]]) -> dict[str, int]:
    result: dict[str, int] = {}
    for region, cents in pairs:
        result[region] = result.get(region, 0) + cents
    print(f"transform: {len(result)} regions")
    return dict(sorted(result.items()))
