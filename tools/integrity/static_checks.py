"""Static integrity checks over a candidate: does ModelNew really launch its own kernel, or does it cheat?

The static layer of the integrity gate: it reads the code (never runs it) and flags the known reward hacks —
torch compute instead of the kernel (also through aliases, getattr, eval, the operator module, tensor methods
and operators, nn modules, an inherited Model), fallbacks, threads, monkeypatching, frame reading, shape
special-casing, cached or precomputed results — plus patches that delete or rewrite most of the kernel
(regeneration, not repair). The dynamic layer lives in `tools/integrity/gate.py` and
`tools/integrity/jobs.py`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

from kernel_medic.tools.repair.edits import changed_fraction

Severity = Literal["cheat", "suspicious"]

# torch names that only allocate, describe, convert or lay out memory: glue a wrapper legitimately needs.
GLUE = {
    # allocation
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "as_tensor", "as_strided", "from_numpy", "Tensor", "Size", "Generator",
    # metadata and dtypes
    "is_tensor", "is_floating_point", "is_complex", "numel", "finfo", "iinfo", "get_default_dtype",
    "promote_types", "result_type", "device", "dtype", "float32", "float16", "bfloat16", "float64", "int32",
    "int64", "int16", "int8", "uint8", "bool", "float", "half", "double", "long", "int", "layout", "strided",
    "contiguous_format", "channels_last", "preserve_format",
    # views and layout
    "reshape", "view_as_real", "view_as_complex", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose",
    "permute", "narrow", "split", "chunk", "unbind", "movedim", "broadcast_to", "broadcast_tensors", "cat",
    "concat", "stack", "pad",
    # launch helpers and contexts
    "cdiv", "next_power_of_2", "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "synchronize",
    "current_device", "get_device_properties", "get_device_capability", "device_count", "is_available",
    "set_device", "compile", "jit",
}  # fmt: skip
# Random generators and constant grids: building weights or buffers in __init__ is legitimate (a model's
# `register_buffer("boundaries", torch.linspace(...))`), anywhere else they are not glue.
INIT_ONLY = {
    "linspace",
    "logspace",
    "eye",
    "randn",
    "rand",
    "randint",
    "randn_like",
    "rand_like",
    "randint_like",
    "normal",
    "randperm",
    "init",
}
# Submodules whose calls are device management, not compute.
DEVICE_MODULES = {"cuda", "npu", "xpu", "mps", "backends", "version", "utils", "testing"}
# Tensor methods that compute (as opposed to views, casts and metadata).
COMPUTE_METHODS = {
    "sum", "mean", "var", "std", "softmax", "log_softmax", "exp", "exp2", "expm1", "log", "log2", "log1p",
    "matmul", "mm", "bmm", "mv", "dot", "relu", "sigmoid", "tanh", "max", "min", "amax", "amin", "argmax",
    "argmin", "norm", "cumsum", "cumprod", "prod", "gelu", "silu", "conv1d", "conv2d", "conv3d",
    "layer_norm", "logsumexp", "addmm", "baddbmm", "einsum", "sort", "topk", "clamp", "clip", "abs", "sqrt",
    "rsqrt", "pow", "erf", "softplus", "mish", "hardtanh", "mul", "add", "sub", "div", "neg", "reciprocal",
    "square", "where", "masked_fill", "lerp", "addcmul", "addcdiv", "floor", "ceil", "round", "sign",
    "maximum", "minimum", "fmod", "remainder", "true_divide", "multiply", "subtract", "divide", "outer",
    "cos", "sin", "any", "all", "median", "mode", "kthvalue", "scatter", "scatter_add", "gather",
    "index_select", "masked_select", "nan_to_num", "numpy", "tolist", "item", "linear", "apply_",
    "map_", "triu", "tril", "flip", "roll", "cross", "diff", "trace", "diag", "logaddexp", "hypot",
    "equal", "allclose", "isclose", "eq", "ne", "lt", "le", "gt", "ge",
}  # fmt: skip
# In-place variants compute too: x.mul_(2), x.exp_().
COMPUTE_METHODS |= {f"{m}_" for m in COMPUTE_METHODS}
# Methods on a tensor that give metadata, never the tensor's values.
META_METHODS = {
    "size", "stride", "numel", "dim", "ndimension", "element_size", "is_contiguous", "data_ptr",
    "storage_offset", "get_device", "is_floating_point", "nelement", "type",
}  # fmt: skip
META_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "layout", "T", "mT", "itemsize", "nbytes"}
# Methods returning a tensor that shares or converts the values (used to follow tensor-valued names).
TENSOR_METHODS = {
    "view", "view_as", "reshape", "reshape_as", "contiguous", "to", "float", "half", "double", "bfloat16",
    "int", "long", "clone", "t", "transpose", "permute", "flatten", "squeeze", "unsqueeze", "expand",
    "expand_as", "narrow", "detach", "cpu", "cuda", "new_empty", "new_zeros", "new_ones", "new_full",
    "as_strided", "unflatten", "movedim",
}  # fmt: skip
NN_CONTAINERS = {
    "Module",
    "Parameter",
    "ParameterList",
    "ParameterDict",
    "ModuleList",
    "ModuleDict",
    "Buffer",
}
# nn modules that legitimately hold the weights a kernel reads (calling them is still delegation).
WEIGHT_HOLDERS = {
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Embedding", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm", "PReLU",
}  # fmt: skip
THREAD_MODULES = {"threading", "_thread", "multiprocessing", "concurrent", "asyncio", "subprocess"}
FRAME_MODULES = {"inspect", "gc", "traceback", "ctypes"}
FRAME_ATTRS = {
    "f_back", "f_globals", "f_locals", "f_code", "tb_frame", "gi_frame", "__globals__", "_getframe",
    "__builtins__", "modules", "__dict__", "__closure__",
}  # fmt: skip
DYNAMIC_CALLS = {"eval", "exec", "compile", "__import__"}
FRAME_CALLS = {"globals", "locals", "vars"}
STREAM_NAMES = {"Stream", "stream", "ExternalStream", "set_stream", "Event"}
RNG_NAMES = {"manual_seed", "seed", "set_rng_state", "get_rng_state", "initial_seed", "manual_seed_all"}
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult, ast.BitAnd,
          ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)  # fmt: skip


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    line: int
    evidence: str
    file: str = "candidate.py"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def static_findings(
    source: str,
    original: str | None = None,
    regeneration_fraction: float = 0.6,
    *,
    filename: str = "candidate.py",
    reference_module: str = "reference",
) -> list[Finding]:
    """Every static integrity finding for a candidate source (empty when it looks honest)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [Finding("unparsable", "cheat", exc.lineno or 0, str(exc), filename)]
    scan = _Scanner(tree, filename, reference_module)
    findings = scan.run()
    if original is not None:
        findings += _patch_findings(source, original, regeneration_fraction, filename)
    unique: list[Finding] = []
    for f in findings:
        if f not in unique:
            unique.append(f)
    return unique


def verdict(findings: list[Finding]) -> Literal["clean", "cheat", "suspicious"]:
    if any(f.severity == "cheat" for f in findings):
        return "cheat"
    return "suspicious" if findings else "clean"


def kernel_names(tree: ast.Module) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and _is_kernel(n)}


def _patch_findings(source: str, original: str, threshold: float, filename: str) -> list[Finding]:
    out: list[Finding] = []
    try:
        before, after = kernel_names(ast.parse(original)), kernel_names(ast.parse(source))
    except SyntaxError:
        before, after = set(), set()
    if before and not after:
        out.append(Finding("kernel_deleted", "cheat", 1, f"the patch deletes every kernel ({sorted(before)})",
                           filename))  # fmt: skip
    share = changed_fraction(original, source)
    if share > threshold:
        out.append(Finding("regeneration", "suspicious", 1, f"the patch changes {share:.0%} of the kernel",
                           filename))  # fmt: skip
    return out


def _is_kernel(fn: ast.FunctionDef) -> bool:
    return any(any(k in ast.unparse(d) for k in ("jit", "autotune", "heuristics")) for d in fn.decorator_list)


_ALLOCATORS = {"empty", "empty_like", "zeros", "zeros_like", "full", "full_like", "new_empty", "new_zeros"}


def _is_count(node: ast.AST) -> bool:
    """`(t != c)` / `(t == c)` with a constant or attribute `c`: `.sum()` of it counts, computes nothing."""
    if not (
        isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq | ast.NotEq)
    ):
        return False
    sides = [node.left, node.comparators[0]]
    return any(
        isinstance(s, ast.Constant)
        or isinstance(s, ast.UnaryOp)
        and isinstance(s.operand, ast.Constant)
        or isinstance(s, ast.Attribute)
        and isinstance(s.value, ast.Name)
        and s.value.id == "self"
        for s in sides
    )


def _snippet(node: ast.AST) -> str:
    text = ast.unparse(node).replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "..."


class _Scanner:
    """One pass over a candidate module: aliases first, then whole-file rules, then ModelNew's code paths."""

    def __init__(self, tree: ast.Module, filename: str, reference_module: str) -> None:
        self.tree = tree
        self.filename = filename
        self.reference_modules = {"reference", reference_module}
        self.findings: list[Finding] = []
        self.aliases: dict[str, str] = {}
        self.imported: set[str] = set()  # local names bound to imported modules
        self.kernels = kernel_names(tree)
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def add(self, rule: str, severity: Severity, node: ast.AST, evidence: str) -> None:
        self.findings.append(Finding(rule, severity, getattr(node, "lineno", 0), evidence, self.filename))

    # -- names ------------------------------------------------------------------------------------------

    def qualify(self, node: ast.AST) -> str | None:
        """The dotted path an expression names (`Q.softmax` -> torch.nn.functional.softmax), if known."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualify(node.value)
            return f"{base}.{node.attr}" if base else None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            base = self.qualify(node.args[0])
            return f"{base}.{node.args[1].value}" if base else None
        return None

    def collect_aliases(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                        self.imported.add(a.asname)
                    else:
                        root = a.name.split(".")[0]
                        self.aliases[root] = root
                        self.imported.add(root)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                    self.imported.add(a.asname or a.name)
        # `sm = torch.softmax`, `T = torch`: follow plain rebindings (twice, for chains of them).
        for _ in range(2):
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    q = self.qualify(node.value)
                    if isinstance(target, ast.Name) and q and target.id not in self.aliases:
                        self.aliases[target.id] = q

    # -- rules ------------------------------------------------------------------------------------------

    def run(self) -> list[Finding]:
        self.collect_aliases()
        self.whole_file()
        model_new = self.classes.get("ModelNew")
        if model_new is None:
            self.add("no_model_new", "cheat", self.tree, "no class ModelNew")
            return self.findings
        self.model_checks(model_new)
        for stmt in self.tree.body:
            if not isinstance(stmt, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
                self.value_references(stmt)
        return self.findings

    def value_references(self, scope: ast.AST) -> None:
        """torch compute named as a value (`ops = {"m": torch.mul}`, `f = F.softmax`): a call in disguise."""
        called = {id(n.func) for n in ast.walk(scope) if isinstance(n, ast.Call)}
        for node in ast.walk(scope):
            if (
                isinstance(node, ast.Attribute | ast.Name)
                and isinstance(node.ctx, ast.Load)
                and id(node) not in called
            ):
                q = self.qualify(node) or ""
                if self.is_compute_path(q) and q.split(".")[-1] not in INIT_ONLY | RNG_NAMES:
                    self.add("torch_compute", "cheat", node, f"{_snippet(node)} used as a value ({q})")

    def whole_file(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                self.import_rules(node)
            elif isinstance(node, ast.Call):
                self.call_rules(node)
            elif isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRS:
                if node.attr != "modules" or self.qualify(node.value) == "sys":
                    self.add("reads_frames_or_globals", "cheat", node, _snippet(node))
            elif isinstance(node, ast.Name) and node.id in ("__builtins__", "builtins"):
                self.add("reads_frames_or_globals", "cheat", node, node.id)
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
                targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
                for target in targets:
                    self.monkeypatch_rule(target, node)
            elif isinstance(node, ast.FunctionDef):
                for d in node.decorator_list:
                    q = self.qualify(d.func if isinstance(d, ast.Call) else d) or ""
                    if q.startswith("functools.") and q.split(".")[-1] in (
                        "cache",
                        "lru_cache",
                        "cached_property",
                    ):
                        self.add("caches_output", "cheat", d, f"@{_snippet(d)} on {node.name}")

    def import_rules(self, node: ast.Import | ast.ImportFrom) -> None:
        names = [a.name for a in node.names]
        modules = names if isinstance(node, ast.Import) else [node.module or ""]
        roots = {m.split(".")[0] for m in modules if m}
        text = _snippet(node)
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            self.add("imports_reference", "cheat", node, text)
        if roots & self.reference_modules or (isinstance(node, ast.ImportFrom) and "Model" in names):
            self.add("imports_reference", "cheat", node, text)
        if roots & {"importlib", "builtins", "runpy", "imp", "pkgutil"}:
            self.add("dynamic_code", "cheat", node, text)
        if "operator" in roots:
            self.add("operator_module", "cheat", node, text)
        if roots & THREAD_MODULES or any(m.startswith("torch.multiprocessing") for m in modules):
            self.add("threads_or_streams", "cheat", node, text)
        if roots & FRAME_MODULES:
            self.add("reads_frames_or_globals", "cheat", node, text)
        if isinstance(node, ast.ImportFrom) and node.module == "sys" and "_getframe" in names:
            self.add("reads_frames_or_globals", "cheat", node, text)

    def call_rules(self, node: ast.Call) -> None:
        func = node.func
        text = _snippet(node)
        if isinstance(func, ast.Name):
            if func.id in DYNAMIC_CALLS:
                self.add("dynamic_code", "cheat", node, text)
            elif func.id in FRAME_CALLS:
                self.add("reads_frames_or_globals", "cheat", node, text)
            elif func.id in ("setattr", "delattr") and node.args:
                q = self.qualify(node.args[0])
                if q is not None:
                    self.add("monkeypatch", "cheat", node, text)
            elif func.id == "getattr" and len(node.args) >= 2:
                name = node.args[1]
                on_module = self.qualify(node.args[0]) is not None
                if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                    self.add("obfuscated_access", "cheat" if on_module else "suspicious", node, text)
                elif on_module and self.is_compute_path(self.qualify(node) or ""):
                    self.add("obfuscated_access", "cheat", node, text)
        q = self.qualify(func) or ""
        leaf = q.split(".")[-1]
        if leaf in RNG_NAMES and q.split(".")[0] in ("torch", "numpy", "random"):
            self.add("rng_tampering", "cheat", node, text)
        if q.split(".")[0] in ("threading", "_thread", "multiprocessing", "concurrent", "asyncio") or (
            q.startswith("torch.") and leaf in STREAM_NAMES
        ):
            self.add("threads_or_streams", "cheat", node, text)
        if q.startswith("os.") and leaf in ("fork", "system", "popen", "spawnv", "execv"):
            self.add("threads_or_streams", "cheat", node, text)

    def monkeypatch_rule(self, target: ast.AST, node: ast.AST) -> None:
        inner = target
        while isinstance(inner, ast.Subscript):
            inner = inner.value
        if isinstance(inner, ast.Attribute):
            q = self.qualify(inner.value)
            if q is not None and q.startswith("torch.backends."):
                return  # numerics flags (allow_tf32) touch only the candidate's own process
            if q is not None and q.split(".")[0] in self.imported | {
                "torch",
                "numpy",
                "time",
                "sys",
                "triton",
            }:
                self.add("monkeypatch", "cheat", node, _snippet(node))

    def is_compute_path(self, q: str) -> bool:
        """Whether a dotted torch/numpy path names compute rather than glue."""
        parts = q.split(".")
        if parts[0] != "torch":
            return False
        if len(parts) == 1 or parts[1] in DEVICE_MODULES:
            return False
        leaf = parts[-1]
        if (
            leaf in ("nn", "functional", "Tensor", "linalg", "fft", "special", "ops", "aten")
            and len(parts) <= 3
        ):
            return False
        return leaf not in GLUE

    # -- ModelNew ---------------------------------------------------------------------------------------

    def model_checks(self, model_new: ast.ClassDef) -> None:
        for base in model_new.bases:
            if self.inherits_model(base, set()):
                self.add("inherits_reference", "cheat", model_new, f"class ModelNew({_snippet(base)})")
        launches = 0
        nn_attrs = self.nn_attributes(model_new)
        for fn, phase in self.reachable(model_new):
            body = _FunctionScan(self, fn, phase, nn_attrs, self.tensor_attrs(model_new))
            launches += body.run()
            if phase == "forward":
                self.value_references(fn)
        if launches == 0:
            self.add("no_kernel_launch", "cheat", model_new, "ModelNew's forward never launches a kernel")

    def inherits_model(self, base: ast.AST, seen: set[str]) -> bool:
        name = base.id if isinstance(base, ast.Name) else None
        q = self.qualify(base) or ""
        if name == "Model" or q.split(".")[0] in self.reference_modules or q.endswith(".Model"):
            return True
        if name in self.classes and name not in seen:
            seen.add(name)
            return any(self.inherits_model(b, seen) for b in self.classes[name].bases)
        return False

    def nn_attributes(self, model_new: ast.ClassDef) -> dict[str, str]:
        """self.<attr> bound to an nn module in ModelNew: {attr: module class name}."""
        found: dict[str, str] = {}
        for node in ast.walk(model_new):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                q = self.qualify(node.value.func) or ""
                if q.startswith("torch.nn.") and q.split(".")[-1][:1].isupper():
                    for t in node.targets:
                        if (
                            isinstance(t, ast.Attribute)
                            and isinstance(t.value, ast.Name)
                            and t.value.id == "self"
                        ):
                            found[t.attr] = q.split(".")[-1]
        return found

    def tensor_attrs(self, model_new: ast.ClassDef) -> set[str]:
        found: set[str] = set()
        for node in ast.walk(model_new):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                q = self.qualify(node.value.func) or ""
                if q.startswith("torch."):
                    for t in node.targets:
                        if (
                            isinstance(t, ast.Attribute)
                            and isinstance(t.value, ast.Name)
                            and t.value.id == "self"
                        ):
                            found.add(t.attr)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if (
                    node.func.attr == "register_buffer"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    found.add(str(node.args[0].value))
        return found

    def reachable(self, model_new: ast.ClassDef) -> Iterator[tuple[ast.FunctionDef, str]]:
        """ModelNew's methods (and its local bases') plus the module functions and classes they name."""
        todo: list[tuple[ast.FunctionDef, str]] = []
        classes = [model_new]
        for base in model_new.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id != "ModelNew":
                classes.append(self.classes[base.id])
        for cls in classes:
            todo += [(n, "init" if n.name == "__init__" else "forward") for n in cls.body
                     if isinstance(n, ast.FunctionDef)]  # fmt: skip
        seen: set[tuple[int, str]] = set()
        while todo:
            fn, phase = todo.pop()
            if (id(fn), phase) in seen or _is_kernel(fn):
                continue
            seen.add((id(fn), phase))
            yield fn, phase
            for node in ast.walk(fn):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    if node.id in self.functions:
                        todo.append((self.functions[node.id], phase))
                    elif node.id in self.classes and node.id not in ("ModelNew", "Model"):
                        # A helper class's own methods run when called, which is forward unless __init__.
                        todo += [
                            (m, "init" if m.name == "__init__" else "forward")
                            for m in self.classes[node.id].body
                            if isinstance(m, ast.FunctionDef)
                        ]


class _FunctionScan:
    """Rules over one function on ModelNew's path; `phase` is init (__init__) or forward."""

    def __init__(
        self,
        scanner: _Scanner,
        fn: ast.FunctionDef,
        phase: str,
        nn_attrs: dict[str, str],
        tensor_attrs: set[str],
    ) -> None:
        self.s = scanner
        self.fn = fn
        self.phase = phase
        self.nn_attrs = nn_attrs
        self.tensor_attrs = tensor_attrs
        self.tensors: set[str] = set()
        self.shapes: set[str] = set()

    def run(self) -> int:
        self.infer_names()
        launches = 0
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Subscript):
                    launches += 1
                    if self.phase == "init":
                        self.add("computes_in_init", node, "kernel launch in __init__: " + _snippet(node))
                elif self.is_kernel_call(node):
                    launches += 1
                else:
                    self.call(node)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, _ARITH) and self.phase == "forward":
                if self.is_mean_of_kernel_output(node):
                    continue  # a kernel's sum divided by the element count: the mean's last step, on the host
                if (
                    isinstance(node.op, ast.MatMult)
                    or self.is_tensor(node.left)
                    or self.is_tensor(node.right)
                ):
                    self.add("tensor_arithmetic", node, _snippet(node))
            elif isinstance(node, ast.UnaryOp) and self.phase == "forward" and self.is_tensor(node.operand):
                if not isinstance(node.op, ast.Not):
                    self.add("tensor_arithmetic", node, _snippet(node))
            elif isinstance(node, ast.AugAssign) and self.phase == "forward" and self.is_tensor(node.target):
                self.add("tensor_arithmetic", node, _snippet(node))
            elif isinstance(node, ast.Compare) and self.phase == "forward":
                self.compare(node)
            elif isinstance(node, ast.Try) and self.phase == "forward":
                self.try_rule(node)
            elif isinstance(node, ast.Assign | ast.AnnAssign) and self.phase == "forward":
                self.state_write(node)
            elif isinstance(node, ast.Return) and self.phase == "forward" and node.value is not None:
                value = node.value
                while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                    value = value.func.value
                if _self_attr(value) is not None and _self_attr(value) not in self.nn_attrs:
                    self.add("returns_stored_tensor", node, _snippet(node))
            elif isinstance(node, ast.Global) and self.phase == "forward":
                self.s.add("caches_output", "suspicious", node, _snippet(node))
            elif isinstance(node, ast.If | ast.IfExp | ast.While) and self.phase == "forward":
                self.branch(node.test)
        return launches

    def add(self, rule: str, node: ast.AST, evidence: str, severity: Severity = "cheat") -> None:
        self.s.add(rule, severity, node, evidence)

    def is_kernel_call(self, node: ast.Call) -> bool:
        # kernel.run(..., grid=...) or kernel[grid] via a helper: both name a local @triton.jit function.
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.s.kernels
            and func.attr in ("run", "warmup")
        )

    # -- tensor-valued names ----------------------------------------------------------------------------

    def infer_names(self) -> None:
        if self.phase == "forward" and self.fn.name == "forward":
            for a in self.fn.args.args[1:] + self.fn.args.kwonlyargs:
                scalar = a.annotation is not None and ast.unparse(a.annotation) in (
                    "int",
                    "float",
                    "bool",
                    "str",
                )
                if not scalar:
                    self.tensors.add(a.arg)
            if self.fn.args.vararg:
                self.tensors.add(self.fn.args.vararg.arg)
        for a in self.fn.args.args:
            if a.annotation is not None and "Tensor" in ast.unparse(a.annotation):
                self.tensors.add(a.arg)
        for _ in range(2):
            for node in ast.walk(self.fn):
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                    if self.is_shape(node.value):
                        self.shapes.update(names)
                    elif self.is_tensor(node.value):
                        self.tensors.update(names)
                elif (
                    isinstance(node, ast.For)
                    and isinstance(node.target, ast.Name)
                    and self.is_tensor(node.iter)
                ):
                    self.tensors.add(node.target.id)

    def is_mean_of_kernel_output(self, node: ast.BinOp) -> bool:
        """`out / n`: `out` allocated here and handed to a kernel launch, `n` a size (a mean's last step)."""
        if not (isinstance(node.op, ast.Div) and isinstance(node.left, ast.Name)):
            return False
        allocated = {
            t.id
            for a in ast.walk(self.fn)
            if isinstance(a, ast.Assign)
            and isinstance(a.value, ast.Call)
            and (self.s.qualify(a.value.func) or "").split(".")[-1] in _ALLOCATORS
            for t in a.targets
            if isinstance(t, ast.Name)
        }
        launched = {
            a.id
            for call in ast.walk(self.fn)
            if isinstance(call, ast.Call)
            and (isinstance(call.func, ast.Subscript) or self.is_kernel_call(call))
            for a in call.args
            if isinstance(a, ast.Name)
        }
        name = node.left.id
        return name in allocated & launched and self.is_shape(node.right) and not self.is_tensor(node.right)

    def is_tensor(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Subscript):
            return self.is_tensor(node.value)
        if isinstance(node, ast.Attribute):
            if node.attr in META_ATTRS:
                return False
            attr = _self_attr(node)
            return (
                attr is not None
                and (attr in self.tensor_attrs or attr in self.nn_attrs)
                or (
                    attr is None
                    and self.is_tensor(node.value)
                    and node.attr in ("weight", "bias", "data", "real")
                )
            )
        if isinstance(node, ast.BinOp):
            return self.is_tensor(node.left) or self.is_tensor(node.right)
        if isinstance(node, ast.Call):
            q = self.s.qualify(node.func) or ""
            if q.startswith("torch.") and not any(p in DEVICE_MODULES for p in q.split(".")):
                return q.split(".")[-1] not in ("finfo", "iinfo", "is_tensor", "device", "Size", "numel")
            if isinstance(node.func, ast.Attribute):
                return node.func.attr in TENSOR_METHODS | COMPUTE_METHODS and self.is_tensor(node.func.value)
        return False

    def is_shape(self, node: ast.AST) -> bool:
        """Whether an expression is (part of) a tensor's size: x.shape, x.size(1), x.numel(), len(x)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr == "shape":
                return True
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                if sub.func.attr in ("size", "numel", "nelement"):
                    return True
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "len":
                return True
            if isinstance(sub, ast.Name) and sub.id in self.shapes:
                return True
        return False

    # -- rules ------------------------------------------------------------------------------------------

    def call(self, node: ast.Call) -> None:
        func = node.func
        q = self.s.qualify(func) or ""
        leaf = q.split(".")[-1]
        text = _snippet(node)
        if q.startswith("torch.nn.") and leaf[:1].isupper() and leaf not in NN_CONTAINERS:
            if leaf not in WEIGHT_HOLDERS or self.phase == "forward":
                self.add("delegates_to_nn_module", node, text)
            return
        if q.startswith("torch.nn.") and leaf in NN_CONTAINERS:
            return  # nn.Parameter(torch.ones(d)) and friends hold weights; their arguments are checked apart
        if q.startswith("torch.nn.init.") and self.phase == "init":
            return
        if self.s.is_compute_path(q):
            if self.phase == "init" and leaf in INIT_ONLY:
                return
            if leaf in RNG_NAMES:
                return  # reported by the whole-file rule
            via = isinstance(func, ast.Call) or (isinstance(func, ast.Name) and func.id != leaf)
            rule = "computes_in_init" if self.phase == "init" else "torch_compute"
            self.add(rule, node, text + (" (through an alias)" if via and rule == "torch_compute" else ""))
            return
        if isinstance(func, ast.Call):  # getattr(...)(...), nn.Softmax()(x)
            inner = self.s.qualify(func.func) or ""
            if inner.startswith("torch.nn.") and inner.split(".")[-1] not in NN_CONTAINERS:
                self.add("delegates_to_nn_module", node, text)
            return
        attr = _self_attr(func)
        if attr is not None and attr in self.nn_attrs:
            self.add("delegates_to_nn_module", node, f"{text} ({self.nn_attrs[attr]})")
            return
        if isinstance(func, ast.Attribute) and attr is None:
            if func.attr == "forward" and _self_attr(func.value) in self.nn_attrs:
                self.add("delegates_to_nn_module", node, text)
                return
            receiver = self.s.qualify(func.value)
            if func.attr == "sum" and _is_count(func.value):
                pass  # counting entries equal to a constant (valid targets): bookkeeping, not the op's math
            elif receiver is None and func.attr in COMPUTE_METHODS and not self.is_shape(func.value):
                rule = "computes_in_init" if self.phase == "init" else "tensor_method_compute"
                if self.phase == "forward" or self.is_tensor(func.value):
                    self.add(rule, node, text)
            elif receiver is None and func.attr.startswith("__") and func.attr.endswith("__"):
                if func.attr not in ("__init__", "__call__") and self.phase == "forward":
                    self.add("tensor_method_compute", node, text)
            if func.attr == "data_ptr" and self.phase == "forward" and self.in_compare(node):
                self.add("caches_output", node, "branches on a buffer address: " + text)

    def in_compare(self, target: ast.AST) -> bool:
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Compare | ast.Dict) and any(n is target for n in ast.walk(node)):
                return True
            if isinstance(node, ast.Subscript) and any(n is target for n in ast.walk(node.slice)):
                return True
        return False

    def compare(self, node: ast.Compare) -> None:
        if not any(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops):
            return
        sides = [node.left, *node.comparators]
        if any(self.is_shape(s) for s in sides) and any(_literal_size(s) for s in sides):
            self.add("shape_special_case", node, _snippet(node))

    def branch(self, test: ast.AST) -> None:
        for sub in ast.walk(test):
            if isinstance(sub, ast.Compare) and all(isinstance(op, ast.Is | ast.IsNot) for op in sub.ops):
                continue
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                if sub.func.attr in ("item", "tolist", "any", "all", "equal", "allclose") and self.is_tensor(
                    sub.func.value
                ):
                    self.add("value_special_case", test, "branches on tensor values: " + _snippet(test))
                    return
            if isinstance(sub, ast.Compare) and any(self.is_tensor(s) for s in [sub.left, *sub.comparators]):
                self.add("value_special_case", test, "branches on tensor values: " + _snippet(test))
                return

    def try_rule(self, node: ast.Try) -> None:
        reraises = all(all(isinstance(stmt, ast.Raise) for stmt in handler.body) for handler in node.handlers)
        if node.handlers and not reraises:
            self.add("try_except_fallback", node, "try/except in the forward path: " + _snippet(node)[:80])

    def state_write(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None or not self.is_tensor(node.value):
            return
        for t in targets:
            inner = t
            while isinstance(inner, ast.Subscript):
                inner = inner.value
            stores_on_self = _self_attr(inner) is not None
            stores_global = isinstance(inner, ast.Name) and inner is not t and inner.id not in self.tensors
            if stores_on_self or stores_global:
                self.add("caches_output", node, "forward keeps a tensor across calls: " + _snippet(node))


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _literal_size(node: ast.AST) -> bool:
    """A literal a shape could be compared with to special-case the test: 1000, (16, 1000), Size([...])."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool) and node.value > 8
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_literal_size(e) for e in node.elts)
    if isinstance(node, ast.Call):
        return any(_literal_size(a) for a in node.args)
    return False
