"""Write per-region totals as CSV."""

from __future__ import annotations


def to_csv(totals: dict[str, int]) -> str:
    print(f"load: writing {len(totals)} rows")
    lines = ["region,total"]
    lines += [f"{region},{cents / 100:.2f}" for region, cents in totals.items()]
    return "\n".join(lines) + "\n"
