"""A problem's evaluation settings (`problem.toml`), validated: devices, seeds, tolerances, variants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEVICES = ("auto", "cpu", "cuda", "npu")


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class ProblemConfig:
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0, 1, 2)
    input_sets: tuple[dict[str, int], ...] = ()
    device: str = "auto"
    timeout_s: float = 60.0
    value_variants: bool = True
    noncontiguous: bool = True
    automatic_shapes: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", tuple(self.seeds))
        object.__setattr__(self, "input_sets", tuple(dict(s) for s in self.input_sets))
        if not self.seeds or not all(type(s) is int for s in self.seeds):
            raise ValueError(f"seeds: expected a non-empty list of integers, got {list(self.seeds)!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device: expected one of {', '.join(DEVICES)}, got {self.device!r}")
        if (
            isinstance(self.timeout_s, bool)
            or not isinstance(self.timeout_s, int | float)
            or self.timeout_s <= 0
        ):
            raise ValueError(f"timeout_s: expected a positive number of seconds, got {self.timeout_s!r}")
        for dtype, pair in self.tolerances.items():
            if len(pair) != 2 or not all(is_number(v) and v >= 0 for v in pair):
                raise ValueError(f"tolerances.{dtype}: expected (atol, rtol), two non-negative numbers")
        for i, overrides in enumerate(self.input_sets):
            for name, value in overrides.items():
                if type(value) is not int:
                    raise ValueError(f"input_sets[{i}].{name}: expected an integer, got {value!r}")
