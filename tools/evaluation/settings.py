"""A problem's evaluation settings (`problem.toml`), validated: devices, seeds, tolerances, variants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEVICES = ("auto", "cpu", "cuda", "npu")
# How a non-contiguous-input case counts: a robustness warning (default), part of the verdict, or not run.
NONCONTIGUOUS_MODES = ("warn", "require", "off")
# Tolerance profiles: "strict" is ours (dtype table, the reference's own rounding error, every variant);
# "kernelbench" is KernelBench's correctness rule (see `kernelbench_config`).
PROFILES = ("strict", "kernelbench")
# KernelBench's eval: `torch.allclose(ref, out, atol=1e-02, rtol=1e-02)` on 5 trials of fresh random inputs
# (`num_correct_trials=5`), every output shape equal; no value, shape or layout variants.
KERNELBENCH_TOLERANCE = (1e-2, 1e-2)
KERNELBENCH_TRIALS = 5


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_tolerance(value: Any) -> str | tuple[float, float]:
    """`"strict"`, `"kernelbench"`, `{atol, rtol}`, `(atol, rtol)` or the CLI's `"ATOL,RTOL"`; ValueError."""
    if isinstance(value, str) and value in PROFILES:
        return value
    if isinstance(value, str) and "," in value:
        parts = value.split(",")
        try:
            value = tuple(float(p) for p in parts)
        except ValueError:
            pass
    if isinstance(value, dict) and set(value) == {"atol", "rtol"}:
        value = (value["atol"], value["rtol"])
    if isinstance(value, tuple | list) and len(value) == 2 and all(is_number(v) and v >= 0 for v in value):
        return (float(value[0]), float(value[1]))
    raise ValueError(
        f"tolerance: expected 'strict', 'kernelbench' or {{atol, rtol}} (two non-negative numbers), "
        f"got {value!r}"
    )


@dataclass(frozen=True)
class ProblemConfig:
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0, 1, 2)
    input_sets: tuple[dict[str, int], ...] = ()
    device: str = "auto"
    timeout_s: float = 60.0
    value_variants: bool = True
    noncontiguous: str = "warn"
    automatic_shapes: bool = True
    tolerance: str | tuple[float, float] = "strict"
    # Shapes chosen by the harness, not the user (the held-back gate's): judged like automatic ones.
    derived_shapes: tuple[dict[str, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", tuple(self.seeds))
        object.__setattr__(self, "input_sets", tuple(dict(s) for s in self.input_sets))
        object.__setattr__(self, "derived_shapes", tuple(dict(s) for s in self.derived_shapes))
        if self.noncontiguous is True or self.noncontiguous is False:  # problem.toml's older boolean form
            object.__setattr__(self, "noncontiguous", "warn" if self.noncontiguous else "off")
        object.__setattr__(self, "tolerance", parse_tolerance(self.tolerance))
        if not self.seeds or not all(type(s) is int for s in self.seeds):
            raise ValueError(f"seeds: expected a non-empty list of integers, got {list(self.seeds)!r}")
        if self.device not in DEVICES:
            raise ValueError(f"device: expected one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.noncontiguous not in NONCONTIGUOUS_MODES:
            raise ValueError(
                f"noncontiguous: expected true, false or one of {', '.join(NONCONTIGUOUS_MODES)}, "
                f"got {self.noncontiguous!r}"
            )
        if (
            isinstance(self.timeout_s, bool)
            or not isinstance(self.timeout_s, int | float)
            or self.timeout_s <= 0
        ):
            raise ValueError(f"timeout_s: expected a positive number of seconds, got {self.timeout_s!r}")
        for dtype, pair in self.tolerances.items():
            if len(pair) != 2 or not all(is_number(v) and v >= 0 for v in pair):
                raise ValueError(f"tolerances.{dtype}: expected (atol, rtol), two non-negative numbers")
        for i, overrides in enumerate((*self.input_sets, *self.derived_shapes)):
            for name, value in overrides.items():
                if type(value) is not int:
                    raise ValueError(f"input_sets[{i}].{name}: expected an integer, got {value!r}")

    @property
    def profile(self) -> str:
        """The tolerance profile's name: strict, kernelbench, or custom ({atol, rtol} for every float)."""
        return self.tolerance if isinstance(self.tolerance, str) else "custom"

    def effective(self) -> ProblemConfig:
        """The settings the cases are built from: the kernelbench profile replaces seeds and variants."""
        if self.tolerance != "kernelbench":
            return self
        seeds = tuple(self.seeds[:KERNELBENCH_TRIALS])
        seeds += tuple(s for s in range(1000) if s not in seeds)[: KERNELBENCH_TRIALS - len(seeds)]
        return ProblemConfig(
            seeds=seeds,
            device=self.device,
            timeout_s=self.timeout_s,
            value_variants=False,
            noncontiguous="off",
            automatic_shapes=False,
            tolerance="kernelbench",
        )
