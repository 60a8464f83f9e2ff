"""Build and render invoices."""

from __future__ import annotations

from dataclasses import dataclass, field

from billing.money import format_cents, to_cents


@dataclass
class Line:
    description: str
    unit_cents: int
    quantity: int = 1

    @property
    def cents(self) -> int:
        return self.unit_cents * self.quantity


@dataclass
class Invoice:
    number: str
    lines: list[Line] = field(default_factory=list)

    def add(self, description: str, price: str, quantity: int = 1) -> Invoice:
        self.lines.append(Line(description, to_cents(price), quantity))
        return self

    @property
    def total_cents(self) -> int:
        return sum(line.cents for line in self.lines)

    def render(self) -> str:
        out = [f"Invoice {self.number}"]
        for line in self.lines:
            out.append(f"  {line.quantity} x {line.description}: {format_cents(line.cents)}")
        out.append(f"TOTAL ${self.total_cents / 100}")
        return "\n".join(out)
