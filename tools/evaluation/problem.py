"""Loading a problem: a KernelBench-style reference, a candidate, and an optional ``problem.toml``.

Both source files are untrusted: they are read and parsed (``ast``) here, never imported or executed.
Running them, and reporting import-time crashes, happens in sandboxed workers.

A problem is either a folder holding ``reference.py``, ``candidate.py`` and optionally ``problem.toml``,
or two file paths (then a ``problem.toml`` beside the candidate is used if present, else one beside the
reference). Every key of
``problem.toml`` is optional::

    device = "cpu"            # "auto" | "cpu" | "cuda" | "npu"
    seeds = [0, 1, 2]         # full-tier seeds; the light tier uses the first
    timeout_s = 30            # wall clock per sandboxed run
    value_variants = true     # full tier: large/small/negative/heavy-tailed/tied values
    noncontiguous = "warn"    # full tier: a non-contiguous-input case, as a warning ("warn"), part of the
                              # verdict ("require"), or not run ("off"; true/false mean warn/off)
    tolerance = "strict"      # "strict" | "kernelbench" | {atol = 1e-3, rtol = 1e-3}
    automatic_shapes = true   # full tier: odd sizes derived from the constants when no input_sets

    [tolerances.float32]      # per dtype (float64, float32, float16, bfloat16, ...)
    atol = 1e-4
    rtol = 1e-4

    [[input_sets]]            # shape variants: new values for module-level integer constants
    batch_size = 3
    dim = 1023
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_medic.tools.evaluation.cases import module_int_constants
from kernel_medic.tools.evaluation.settings import ProblemConfig, is_number, parse_tolerance

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

REFERENCE_FILE = "reference.py"
CANDIDATE_FILE = "candidate.py"
CONFIG_FILE = "problem.toml"

_DTYPE_ALIASES = {
    "fp64": "float64",
    "double": "float64",
    "fp32": "float32",
    "float": "float32",
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
}
_DTYPES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
)
# Bases that contribute no constructor parameters of their own.
_PLAIN_BASES = {"Module", "nn.Module", "torch.nn.Module", "object"}


class InvalidProblem(Exception):
    """Bad input; str(exc) is ONE clear line a user can act on (the CLI prints it and exits 2)."""


@dataclass(frozen=True)
class Problem:
    name: str
    reference_path: Path
    candidate_path: Path
    reference_source: str
    candidate_source: str
    config: ProblemConfig
    size_constants: dict[str, int]

    def with_candidate(self, source: str) -> Problem:
        """Same problem, another candidate source (the repair loop's patched versions)."""
        return dataclasses.replace(self, candidate_source=source)

    def with_tolerance(self, tolerance: str | None) -> Problem:
        """Same problem judged by another tolerance profile (the CLI's --tolerance); None keeps its own."""
        if not tolerance:
            return self
        try:
            config = dataclasses.replace(self.config, tolerance=parse_tolerance(tolerance))
        except ValueError as exc:
            raise InvalidProblem(str(exc)) from None
        return dataclasses.replace(self, config=config)


# ---------------------------------------------------------------------------------------------------------
# problem.toml


def _tolerances(path: Path, raw: Any) -> dict[str, tuple[float, float]]:
    if not isinstance(raw, dict):
        raise InvalidProblem(f"{path}: tolerances must be a table of dtypes, e.g. [tolerances.float32]")
    result: dict[str, tuple[float, float]] = {}
    for key, entry in raw.items():
        dtype = _DTYPE_ALIASES.get(key, key)
        if dtype not in _DTYPES:
            raise InvalidProblem(f"{path}: unknown dtype 'tolerances.{key}' (known: {', '.join(_DTYPES)})")
        if not isinstance(entry, dict):
            raise InvalidProblem(f"{path}: tolerances.{key} must be a table with atol and rtol")
        extra = sorted(set(entry) - {"atol", "rtol"})
        if extra:
            raise InvalidProblem(f"{path}: unknown key 'tolerances.{key}.{extra[0]}' (expected atol, rtol)")
        for part in ("atol", "rtol"):
            if part not in entry:
                raise InvalidProblem(f"{path}: tolerances.{key} needs both atol and rtol ({part} is missing)")
            if not is_number(entry[part]) or entry[part] < 0:
                raise InvalidProblem(f"{path}: tolerances.{key}.{part} must be a non-negative number")
        result[dtype] = (float(entry["atol"]), float(entry["rtol"]))
    return result


def _input_sets(path: Path, raw: Any) -> tuple[dict[str, int], ...]:
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        raise InvalidProblem(f"{path}: input_sets must be an array of tables, e.g. [[input_sets]]")
    for i, entry in enumerate(raw):
        for name, value in entry.items():
            if type(value) is not int:
                raise InvalidProblem(f"{path}: input_sets[{i}].{name} must be an integer, got {value!r}")
    return tuple(dict(s) for s in raw)


def load_config(path: Path) -> ProblemConfig:
    """Parse a problem.toml; InvalidProblem (one line naming the file and key) on anything unexpected."""
    path = Path(path)
    text = _read_text(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidProblem(f"{path}: invalid TOML: {_one_line(str(exc))}") from None
    known = {f.name for f in dataclasses.fields(ProblemConfig)}
    for key in raw:
        if key not in known:
            raise InvalidProblem(f"{path}: unknown key {key!r} (known: {', '.join(sorted(known))})")
    kwargs: dict[str, Any] = {}
    if "tolerances" in raw:
        kwargs["tolerances"] = _tolerances(path, raw["tolerances"])
    if "input_sets" in raw:
        kwargs["input_sets"] = _input_sets(path, raw["input_sets"])
    for key in ("value_variants", "automatic_shapes"):
        if key in raw:
            if not isinstance(raw[key], bool):
                raise InvalidProblem(f"{path}: {key} must be true or false, got {raw[key]!r}")
            kwargs[key] = raw[key]
    if "noncontiguous" in raw:
        kwargs["noncontiguous"] = raw["noncontiguous"]
    if "tolerance" in raw:
        kwargs["tolerance"] = raw["tolerance"]
    if "seeds" in raw:
        if not isinstance(raw["seeds"], list):
            raise InvalidProblem(f"{path}: seeds must be a list of integers, e.g. seeds = [0, 1, 2]")
        kwargs["seeds"] = tuple(raw["seeds"])
    if "device" in raw:
        kwargs["device"] = raw["device"]
    if "timeout_s" in raw:
        kwargs["timeout_s"] = raw["timeout_s"]
    try:
        return ProblemConfig(**kwargs)
    except ValueError as exc:
        raise InvalidProblem(f"{path}: {exc}") from None


# ---------------------------------------------------------------------------------------------------------
# Source files


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _read_text(path: Path) -> str:
    if not path.exists():
        raise InvalidProblem(f"{path}: no such file")
    if not path.is_file():
        raise InvalidProblem(f"{path}: not a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidProblem(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidProblem(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None


def _parse(path: Path, source: str) -> ast.Module:
    try:
        return ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise InvalidProblem(f"{path}:{exc.lineno or 1}: SyntaxError: {_one_line(exc.msg)}") from None
    except ValueError as exc:  # e.g. null bytes, reported as ValueError before Python 3.12
        raise InvalidProblem(f"{path}:1: SyntaxError: {_one_line(str(exc))}") from None


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements run at import time, including those inside if/try/with blocks (not defs' bodies)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _top_level(getattr(stmt, name, []) or [])
        for handler in getattr(stmt, "handlers", []) or []:
            yield from _top_level(handler.body)


def _names_of(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from _names_of(elt)
    elif isinstance(target, ast.Starred):
        yield from _names_of(target.value)


_Bindings = dict[str, list[ast.stmt]]


def _module_bindings(tree: ast.Module) -> _Bindings:
    """Module-level name -> the statements binding it (def, class, assignment, import), in source order."""
    bound: _Bindings = {}

    def bind(name: str, stmt: ast.stmt) -> None:
        bound.setdefault(name, []).append(stmt)

    for stmt in _top_level(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bind(stmt.name, stmt)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in _names_of(target):
                    bind(name, stmt)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            for name in _names_of(stmt.target):
                bind(name, stmt)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                if alias.name != "*":
                    bind(alias.asname or alias.name.split(".")[0], stmt)
    return bound


def _bound_before(bindings: _Bindings, name: str, stmt: ast.stmt) -> ast.stmt | None:
    """What `name` refers to where `stmt` starts (`class ModelNew(ModelNew)` means the earlier one)."""
    earlier = [b for b in bindings.get(name, []) if b.lineno < stmt.lineno]
    return earlier[-1] if earlier else None


_REFERENCE_HINT = "a reference defines class Model, get_inputs() and get_init_inputs() at module level"
_CANDIDATE_HINT = "a candidate defines class ModelNew with Model's constructor signature"


def _require(path: Path, bindings: _Bindings, name: str, what: str, hint: str) -> None:
    if name not in bindings:
        raise InvalidProblem(f"{path}: no module-level {what} {name!r} ({hint})")


# ---------------------------------------------------------------------------------------------------------
# Constructor signatures

_Param = tuple[str, str, bool]  # (kind, name, has_default)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _init_params(cls: ast.ClassDef, bindings: _Bindings, seen: frozenset[int]) -> list[_Param] | None:
    """The `__init__` parameters without `self`; None when they cannot be known from this file."""
    init = None
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == "__init__":
            init = stmt
    if init is not None:
        return _params(init.args)
    for base in cls.bases:
        name = _dotted(base)
        if name in _PLAIN_BASES:
            continue
        local = _bound_before(bindings, name, cls) if name else None
        if not isinstance(local, ast.ClassDef) or id(local) in seen:
            return None  # imported or computed base: its constructor is unknown here
        inherited = _init_params(local, bindings, seen | {id(local)})
        if inherited != []:
            return inherited
    return []


def _params(args: ast.arguments) -> list[_Param]:
    positional = [*args.posonlyargs, *args.args]
    defaults_from = len(positional) - len(args.defaults)
    params: list[_Param] = []
    for i, arg in enumerate(positional):
        kind = "posonly" if i < len(args.posonlyargs) else "positional"
        params.append((kind, arg.arg, i >= defaults_from))
    params = params[1:]  # self
    if args.vararg is not None:
        params.append(("varargs", args.vararg.arg, False))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params.append(("kwonly", arg.arg, default is not None))
    if args.kwarg is not None:
        params.append(("varkw", args.kwarg.arg, False))
    return params


def _render(cls: str, params: list[_Param]) -> str:
    parts: list[str] = []
    kinds = [kind for kind, _, _ in params]
    for i, (kind, name, has_default) in enumerate(params):
        if kind == "kwonly" and "varargs" not in kinds and (i == 0 or params[i - 1][0] != "kwonly"):
            parts.append("*")
        prefix = {"varargs": "*", "varkw": "**"}.get(kind, "")
        parts.append(prefix + name + ("=..." if has_default else ""))
        if kind == "posonly" and (i + 1 == len(params) or params[i + 1][0] != "posonly"):
            parts.append("/")
    return f"{cls}({', '.join(parts)})"


def _shape(params: list[_Param]) -> list[tuple[str, str, bool]]:
    # The names of *args / **kwargs do not matter to a caller.
    return [
        (kind, "" if kind in ("varargs", "varkw") else name, has_default)
        for kind, name, has_default in params
    ]


def _accepts_anything(params: list[_Param]) -> bool:
    kinds = {kind for kind, _, _ in params}
    return {"varargs", "varkw"} <= kinds


def _check_constructors(candidate_path: Path, ref_bindings: _Bindings, cand_bindings: _Bindings) -> None:
    model, model_new = ref_bindings["Model"][-1], cand_bindings["ModelNew"][-1]
    if not isinstance(model, ast.ClassDef) or not isinstance(model_new, ast.ClassDef):
        return
    ref_params = _init_params(model, ref_bindings, frozenset({id(model)}))
    cand_params = _init_params(model_new, cand_bindings, frozenset({id(model_new)}))
    if ref_params is None or cand_params is None:
        return
    if _accepts_anything(cand_params) or _accepts_anything(ref_params):
        return
    if _shape(ref_params) != _shape(cand_params):
        raise InvalidProblem(
            f"{candidate_path}: constructor mismatch: {_render('Model', ref_params)} "
            f"vs {_render('ModelNew', cand_params)}"
        )


# ---------------------------------------------------------------------------------------------------------
# Loading


def _problem_paths(reference: Path, candidate: Path | None) -> tuple[str, Path, Path, Path | None]:
    if candidate is None:
        if not reference.exists():
            raise InvalidProblem(f"{reference}: no such file or folder")
        if not reference.is_dir():
            raise InvalidProblem(
                f"{reference}: is a file; pass a problem folder, or both a reference and a candidate file"
            )
        for file in (REFERENCE_FILE, CANDIDATE_FILE):
            if not (reference / file).is_file():
                raise InvalidProblem(
                    f"{reference}: no {file} (a problem folder holds {REFERENCE_FILE} and {CANDIDATE_FILE})"
                )
        config = reference / CONFIG_FILE
        name = reference.resolve().name
        return (
            name,
            reference / REFERENCE_FILE,
            reference / CANDIDATE_FILE,
            config if config.exists() else None,
        )
    # The problem's promises (strided inputs required, its tolerances) hold for every candidate of it: a
    # candidate written elsewhere (a scratch file, a temporary folder) is judged by the problem.toml beside
    # its reference when none is beside it.
    configs = [p / CONFIG_FILE for p in (candidate.parent, reference.parent)]
    return candidate.stem, reference, candidate, next((c for c in configs if c.exists()), None)


def load_problem(
    reference: str | Path, candidate: str | Path | None = None, *, config: ProblemConfig | None = None
) -> Problem:
    """Read and statically check a problem; InvalidProblem with one actionable line when it is unusable."""
    name, ref_path, cand_path, config_path = _problem_paths(
        Path(reference), None if candidate is None else Path(candidate)
    )
    ref_source, cand_source = _read_text(ref_path), _read_text(cand_path)
    ref_bindings = _module_bindings(_parse(ref_path, ref_source))
    _require(ref_path, ref_bindings, "Model", "class", _REFERENCE_HINT)
    _require(ref_path, ref_bindings, "get_inputs", "function", _REFERENCE_HINT)
    _require(ref_path, ref_bindings, "get_init_inputs", "function", _REFERENCE_HINT)
    try:
        cand_bindings = _module_bindings(_parse(cand_path, cand_source))
    except InvalidProblem:
        # A candidate that is not valid Python (prose or a markdown fence left in a generation) is the
        # candidate's crash, judged `compile_error` with its line and repairable, not bad input.
        cand_bindings = None
    if cand_bindings is not None:
        _require(cand_path, cand_bindings, "ModelNew", "class", _CANDIDATE_HINT)
        _check_constructors(cand_path, ref_bindings, cand_bindings)

    origin = "config"
    if config is None:
        config = load_config(config_path) if config_path is not None else ProblemConfig()
        origin = str(config_path) if config_path is not None else origin
    constants = module_int_constants(ref_source)
    for i, overrides in enumerate(config.input_sets):
        for key in overrides:
            if key not in constants:
                known = ", ".join(sorted(constants)) or "none"
                raise InvalidProblem(
                    f"{origin}: input_sets[{i}].{key} is not a module-level integer constant of "
                    f"{ref_path} (known: {known})"
                )
    return Problem(
        name=name,
        reference_path=ref_path,
        candidate_path=cand_path,
        reference_source=ref_source,
        candidate_source=cand_source,
        config=config,
        size_constants=constants,
    )
