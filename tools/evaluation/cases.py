"""Evaluation cases: which seeds, value distributions, shapes and layouts a candidate is checked on.

The functions here only describe and transform; running a case happens in sandboxed workers. A shape
variant is expressed as new values for the reference's module-level integer constants (KernelBench's
``batch_size = 16``, ``dim = 16384``), applied by rewriting the source text before it is executed.
"""

from __future__ import annotations

import ast
import io
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from kernel_medic.tools.evaluation.settings import ProblemConfig

if TYPE_CHECKING:
    import torch

VALUE_VARIANTS: tuple[str, ...] = (
    "x100",
    "x1e-3",
    "all_negative",
    "all_positive",
    "shifted_mean",
    "heavy_tailed",
    "integer_ties",
    "large_positive",
)

# The variants that only rescale the inputs, by their factor (the evaluator scales atol up with them).
MAGNITUDES: dict[str, float] = {"x100": 100.0, "x1e-3": 1e-3}

# Keeps all_negative / all_positive strictly away from zero in every float dtype, bfloat16 included.
_SIGN_MARGIN = 1e-2
_HEAVY_TAIL_CLIP = 1e3
# large_positive: positive values whose sum along the last dimension passes float16's largest finite value
# this many times over, so a kernel that accumulates in half precision overflows where fp32 does not.
_HALF_MAX = 65504.0
_OVERFLOW_MARGIN = 4.0
_LARGE_POSITIVE_CAP = 2048.0
_SMALLEST_CHANGED = 8


@dataclass(frozen=True)
class CaseSpec:
    """One evaluation case; a worker builds the inputs from it deterministically."""

    name: str
    seed: int
    value_variant: str | None = None
    size_overrides: tuple[tuple[str, int], ...] = ()
    noncontiguous: bool = False
    derived: bool = False  # a shape the harness chose (not the user's input_sets): may be outside the domain

    def __post_init__(self) -> None:
        if self.value_variant is not None and self.value_variant not in VALUE_VARIANTS:
            raise ValueError(
                f"unknown value variant {self.value_variant!r}: expected one of {VALUE_VARIANTS}"
            )
        object.__setattr__(
            self, "size_overrides", tuple(sorted((str(k), int(v)) for k, v in self.size_overrides))
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "seed": self.seed,
            "value_variant": self.value_variant,
            "size_overrides": dict(self.size_overrides),
            "noncontiguous": self.noncontiguous,
            "derived": self.derived,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseSpec:
        return cls(
            name=data["name"],
            seed=int(data["seed"]),
            value_variant=data.get("value_variant"),
            size_overrides=tuple(dict(data.get("size_overrides") or {}).items()),
            noncontiguous=bool(data.get("noncontiguous", False)),
            derived=bool(data.get("derived", False)),
        )


# ---------------------------------------------------------------------------------------------------------
# Module-level integer constants


def _int_literal(node: ast.expr | None) -> int | None:
    """The value of `3` or `-3` (bools excluded), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at module level, including those nested in if/try/with/for/while blocks."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _module_statements(getattr(stmt, field, []) or [])
        for handler in getattr(stmt, "handlers", []) or []:
            yield from _module_statements(handler.body)
        for case in getattr(stmt, "cases", []) or []:
            yield from _module_statements(case.body)


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _binding_counts(tree: ast.Module) -> Counter[str]:
    """How often each module-level name is bound (assignments, defs, imports, loops, `global` writes)."""
    counts: Counter[str] = Counter()
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                counts.update(_target_names(target))
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            counts.update(_target_names(stmt.target))
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            counts.update(_target_names(stmt.target))
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                if item.optional_vars is not None:
                    counts.update(_target_names(item.optional_vars))
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            counts[stmt.name] += 1
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                counts[alias.asname or alias.name.split(".")[0]] += 1
    # A function that declares `global X` may rebind X at any time.
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            counts.update({name: 2 for name in node.names})
    return counts


def _constant_nodes(tree: ast.Module) -> dict[str, ast.expr]:
    counts = _binding_counts(tree)
    found: dict[str, ast.expr] = {}
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            name, value = stmt.target.id, stmt.value
        else:
            continue
        if counts[name] == 1 and _int_literal(value) is not None:
            found[name] = value
    return found


def module_int_constants(source: str) -> dict[str, int]:
    """Module-level `NAME = <int literal>` bindings (bools and names bound more than once are ignored)."""
    nodes = _constant_nodes(ast.parse(source))
    return {name: int(_int_literal(node)) for name, node in nodes.items()}  # type: ignore[arg-type]


def rewrite_constants(source: str, overrides: Mapping[str, int]) -> str:
    """`source` with the literals of the named constants replaced; every other byte is kept."""
    nodes = _constant_nodes(ast.parse(source))
    unknown = sorted(set(overrides) - set(nodes))
    if unknown:
        raise ValueError(
            f"not module-level integer constants of the source: {', '.join(unknown)} "
            f"(known: {', '.join(sorted(nodes)) or 'none'})"
        )
    for name, value in overrides.items():
        if type(value) is not int:
            raise ValueError(f"override for {name} must be an int, got {value!r}")
    # Python's own line breaks only: str.splitlines would also split on form feeds and similar.
    lines = io.StringIO(source, newline="").readlines()
    # ast column offsets count UTF-8 bytes; sort by position so earlier edits do not shift later ones.
    edits = sorted(
        ((nodes[name], value) for name, value in overrides.items()),
        key=lambda e: (e[0].lineno, e[0].col_offset),
        reverse=True,
    )
    for node, value in edits:
        assert node.end_lineno is not None and node.end_col_offset is not None
        first, last = node.lineno - 1, node.end_lineno - 1
        head = lines[first].encode()[: node.col_offset].decode()
        tail = lines[last].encode()[node.end_col_offset :].decode()
        lines[first : last + 1] = [head + repr(value) + tail]
    return "".join(lines)


# ---------------------------------------------------------------------------------------------------------
# Shape variants


def _odd_below(value: int, rank: int) -> int:
    """The `rank`-th odd number strictly below `value` (rank 0 is the closest)."""
    closest = value - 1 if value % 2 == 0 else value - 2
    return closest - 2 * rank


def automatic_shape_overrides(constants: Mapping[str, int]) -> list[dict[str, int]]:
    """Shape variants that are not multiples of any block size 16..4096: all sizes a little smaller, the last
    one alone a little smaller, and the last one alone about twice as large (a kernel that covers only one
    block or tile of a row, or restarts at each block, is right at the problem's size and wrong past it).

    Constants below 8 are left alone: they are usually axes, kernel sizes or channel counts.
    """
    changeable = [name for name, value in constants.items() if value >= _SMALLEST_CHANGED]
    if not changeable:
        return []
    last = changeable[-1]
    variants = [{name: _odd_below(constants[name], 0) for name in changeable}]
    if len(changeable) >= 2:
        variants.append({last: _odd_below(constants[last], 1)})
    variants.append({last: 2 * constants[last] + 1})
    unique: list[dict[str, int]] = []
    for variant in variants:
        if variant not in unique:
            unique.append(variant)
    return unique


# ---------------------------------------------------------------------------------------------------------
# Value variants and layouts


def _draw(shape: torch.Size, generator: torch.Generator, kind: Literal["normal", "uniform"]) -> torch.Tensor:
    import torch

    draw = torch.randn if kind == "normal" else torch.rand
    return draw(shape, generator=generator, device=generator.device, dtype=torch.float64)


def apply_value_variant(t: torch.Tensor, variant: str, generator: torch.Generator) -> torch.Tensor:
    """`t` with its values redistributed by `variant`; same dtype, shape, device and strides.

    Non-floating tensors (indices, masks) are returned unchanged.
    """
    import torch

    if variant not in VALUE_VARIANTS:
        raise ValueError(f"unknown value variant {variant!r}: expected one of {VALUE_VARIANTS}")
    if not t.is_floating_point():
        return t
    with torch.no_grad():
        x = t.detach().to(torch.float64)
        if variant in MAGNITUDES:
            values = x * MAGNITUDES[variant]
        elif variant == "all_negative":
            values = -x.abs() - _SIGN_MARGIN
        elif variant == "all_positive":
            values = x.abs() + _SIGN_MARGIN
        elif variant == "shifted_mean":
            values = x + 3
        elif variant == "large_positive":
            width = t.shape[-1] if t.ndim else 1
            level = min(max(_OVERFLOW_MARGIN * _HALF_MAX / max(width, 1), 1.0), _LARGE_POSITIVE_CAP)
            values = level * (1.0 + _draw(t.shape, generator, "uniform"))
        elif variant == "heavy_tailed":
            # Student's t with 2 degrees of freedom: finite mean, infinite variance.
            z = _draw(t.shape, generator, "normal")
            chi2 = _draw(t.shape, generator, "normal") ** 2 + _draw(t.shape, generator, "normal") ** 2
            values = (z / torch.sqrt(chi2 / 2).clamp_min(1e-12)).clamp(-_HEAVY_TAIL_CLIP, _HEAVY_TAIL_CLIP)
        else:  # integer_ties
            values = torch.randint(-3, 4, t.shape, generator=generator, device=generator.device).to(
                torch.float64
            )
        out = torch.empty_like(t, memory_format=torch.preserve_format)
        out.copy_(values.to(device=t.device, dtype=t.dtype))
    return out


def make_noncontiguous(t: torch.Tensor) -> torch.Tensor:
    """Same values in non-contiguous storage (0-d and 1-element tensors are returned unchanged)."""
    import torch

    if t.ndim == 0 or t.numel() < 2:
        return t
    with torch.no_grad():
        if t.ndim >= 2:
            out = t.detach().transpose(-1, -2).contiguous().transpose(-1, -2)
            if not out.is_contiguous():
                return out
        # 1-d, or last two dims where one has size 1 (transposing them keeps the tensor contiguous):
        # every element lives at twice its contiguous offset in a buffer twice as long.
        strides, step = [], 2
        for size in reversed(t.shape):
            strides.append(step)
            step *= max(size, 1)
        buffer = t.new_zeros(2 * t.numel())
        out = buffer.as_strided(t.shape, tuple(reversed(strides)))
        out.copy_(t)
    return out


# ---------------------------------------------------------------------------------------------------------
# Tiers


def _shape_name(overrides: Mapping[str, int]) -> str:
    return "shape[" + ",".join(f"{k}={v}" for k, v in sorted(overrides.items())) + "]"


# Micro sizes: small, odd (a tail for every block size) and distinct (a transposed index cannot hide behind a
# square shape); the last size the largest, so a row still spans a few lanes of a block of 16 or 32.
_MICRO_SIZES = (37, 19, 23, 29, 31, 41, 43, 47)
_MICRO_LAST = 67


def micro_shape_overrides(constants: Mapping[str, int]) -> dict[str, int]:
    """The smallest shape that still exercises tails and several programs per axis: every size of 8 or more
    becomes a small distinct odd number below it; smaller constants (axes, kernel sizes, channel counts)
    stay."""
    changeable = [name for name, value in constants.items() if value >= _SMALLEST_CHANGED]
    out: dict[str, int] = {}
    # Last first, so the last keeps the largest size. Equal constants (a 32 x 32 attention head, a square
    # matrix) would give equal sizes, and a size swapped for another would pass; nearly equal ones (31 and
    # 29) would hide it in the tolerance (a scale of 1/sqrt(29) for 1/sqrt(31)): two thirds of a taken size
    # keeps them well apart.
    for i, name in reversed(list(enumerate(changeable))):
        target = _MICRO_LAST if i == len(changeable) - 1 else _MICRO_SIZES[i % len(_MICRO_SIZES)]
        size = min(target, _odd_below(constants[name], 0))
        while size in out.values() and size > 3:
            size = max(3, (size * 2 // 3) | 1)
        out[name] = size
    return {name: out[name] for name in changeable}


def cases_for_tier(
    tier: str, config: ProblemConfig, constants: Mapping[str, int]
) -> list[CaseSpec]:
    """The cases of a tier: micro is one seed at the micro shape (for screening many edits; without a size to
    shrink it is the light case); light is one seed; full adds seeds, value variants, shapes and a layout;
    `case:NAME` is the full tier's case of that name alone."""
    if tier.startswith("case:"):
        # One case of the full tier: screening on the case that shows a bug the light case does not.
        chosen = [c for c in cases_for_tier("full", config, constants) if c.name == tier[len("case:") :]]
        if not chosen:
            raise ValueError(f"no case {tier[len('case:') :]!r} in the full tier")
        return chosen
    if tier not in ("micro", "light", "full"):
        raise ValueError(f"unknown tier {tier!r}: expected 'micro', 'light', 'full' or 'case:NAME'")
    config = config.effective()
    base = config.seeds[0]
    if tier == "micro":
        overrides = micro_shape_overrides(constants)
        if not overrides:
            return [CaseSpec(name=f"seed{base}", seed=base)]
        sizes = tuple(overrides.items())
        return [CaseSpec(name=f"micro{base}", seed=base, size_overrides=sizes, derived=True)]
    if tier == "light":
        return [CaseSpec(name=f"seed{base}", seed=base)]

    cases: list[CaseSpec] = []
    seen: set[str] = set()

    def add(case: CaseSpec) -> None:
        if case.name not in seen:
            seen.add(case.name)
            cases.append(case)

    for seed in config.seeds:
        add(CaseSpec(name=f"seed{seed}", seed=seed))
    if config.value_variants:
        for variant in VALUE_VARIANTS:
            add(CaseSpec(name=variant, seed=base, value_variant=variant))
    if config.input_sets:
        shapes, derived = [dict(s) for s in config.input_sets], False
    elif config.derived_shapes:
        shapes, derived = [dict(s) for s in config.derived_shapes], True
    elif config.automatic_shapes:
        shapes, derived = automatic_shape_overrides(constants), True
    else:
        shapes, derived = [], False
    for overrides in shapes:
        if overrides:
            name, sizes = _shape_name(overrides), tuple(overrides.items())
            add(CaseSpec(name=name, seed=base, size_overrides=sizes, derived=derived))
    if config.noncontiguous != "off":
        add(CaseSpec(name="noncontig", seed=base, noncontiguous=True))
    return cases
