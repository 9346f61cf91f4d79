"""Static integrity checks over a candidate: does ModelNew really launch its own kernel, or does it cheat?

The static layer of the integrity gate reads the code (never runs it), default-deny: imports outside a short
allowlist, torch routes around the glue allowlist (raw `torch.ops`, `torch.jit`, `torch.library`,
`torch._C`...), Tensor subclasses, inheriting nn modules, hooks, dynamic code, reading tensor values into
Python and branching on the device are findings wherever they appear; module-level code, class bodies and
every function in the file (however it is reached) are held to forward's rules (torch compute through
aliases, getattr, tensor methods and operators, nn modules, fallbacks, threads, monkeypatching, frames,
shape or value special cases, caches); `@triton.jit` bodies may call only Triton. Host reductions over
buffers a kernel wrote are notes. Patches that delete or rewrite most of the kernel are flagged too. The
dynamic layer lives in `tools/integrity/jobs.py` (in the sandbox) and `tools/integrity/gate.py`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

from kernel_medic.tools.integrity.function_scan import FunctionScan
from kernel_medic.tools.integrity.vocabulary import (
    ALLOWED_AUTOGRAD,
    ALLOWED_IMPORTS,
    ALLOWED_OS,
    ALLOWED_SYS,
    COMPUTE_METHODS,
    DENIED_TORCH,
    DEVICE_ATTRS,
    DEVICE_MODULES,
    DYNAMIC_CALLS,
    FRAME_ATTRS,
    FRAME_CALLS,
    FRAME_MODULES,
    GLUE,
    HOOKS,
    INIT_ONLY,
    KERNEL_BUILTINS,
    META_ATTRS,
    RNG_NAMES,
    STREAM_NAMES,
    TENSOR_METHODS,
    THREAD_MODULES,
    VALUE_READS,
    Severity,
    is_device_expr,
    is_kernel,
    is_self,
    snippet,
)
from kernel_medic.tools.repair.edits import changed_fraction


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    line: int
    evidence: str
    file: str = "candidate.py"
    origin: str | None = None  # "introduced" by the repair or "pre-existing" (audits given the original)
    reached: bool | None = None  # whether the audited runs executed its line (None: not known)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or k not in ("origin", "reached")}


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
    return "suspicious" if any(f.severity == "suspicious" for f in findings) else "clean"


def kernel_names(tree: ast.Module) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and is_kernel(n)}


def _patch_findings(source: str, original: str, threshold: float, filename: str) -> list[Finding]:
    out: list[Finding] = []
    try:
        before, after = kernel_names(ast.parse(original)), kernel_names(ast.parse(source))
    except SyntaxError:
        before, after = set(), set()
    if before and not after:
        out.append(Finding("kernel_deleted", "cheat", 1, f"the patch deletes every kernel ({sorted(before)})",
                           filename))  # fmt: skip
    try:
        after_loops = _constant_trip_counts(ast.parse(source))
        before_loops = _constant_trip_counts(ast.parse(original))
    except SyntaxError:
        after_loops, before_loops = {}, {}
    for code, line in sorted(after_loops.items()):
        if code in before_loops:
            continue
        out.append(Finding("constant_trip_count", "suspicious", line,
                           f"the patch makes a kernel loop run a fixed number of times ({code}): a count "
                           "fitted to the tested sizes, not derived from them", filename))  # fmt: skip
    try:
        foreign = _foreign_trip_counts(ast.parse(source))
        foreign_before = _foreign_trip_counts(ast.parse(original))
    except SyntaxError:
        foreign, foreign_before = {}, {}
    for code, (line, bound, masked) in sorted(foreign.items()):
        if code in foreign_before:
            continue
        out.append(Finding("foreign_trip_count", "suspicious", line,
                           f"the patch makes a kernel loop run {bound} times while its index is bounded by "
                           f"{masked}: a count from another dimension, right only where it happens to be "
                           "large enough", filename))  # fmt: skip
    share = changed_fraction(original, source)
    if share > threshold:
        out.append(Finding("regeneration", "suspicious", 1, f"the patch changes {share:.0%} of the kernel",
                           filename))  # fmt: skip
    return out


_NUMBERS_RANGE = re.compile(r"range\(\s*[0-9_.eExXa-fA-F\s+\-*/%~(),]*\)")
"""Text that may be a `range` of numbers only: a candidate without one needs no parse (the search asks this of
every edit it generates)."""


def introduces_constant_trip_count(source: str, base: str) -> bool:
    """Whether `source` has a kernel loop with a fixed trip count that `base` does not: the gate refuses such
    a patch however well it scores, so a search must not build on it either."""
    if not _NUMBERS_RANGE.search(source):
        return False
    try:
        after = _constant_trip_counts(ast.parse(source))
        if not after:
            return False
        return bool(after.keys() - _constant_trip_counts(ast.parse(base)).keys())
    except SyntaxError:
        return False


def introduces_foreign_trip_count(source: str, base: str) -> bool:
    """Whether `source` has a tiled kernel loop counted by another dimension than its mask's that `base` does
    not: refused by the gate, so not a step to build on either."""
    if "range(" not in source:
        return False
    try:
        after = _foreign_trip_counts(ast.parse(source))
        return bool(after) and bool(after.keys() - _foreign_trip_counts(ast.parse(base)).keys())
    except SyntaxError:
        return False


def _constant_trip_counts(tree: ast.Module) -> dict[str, int]:
    """Each kernel loop whose `range` arguments are numbers only (`range(1 + 1)`), as code -> line. Compared
    by code with the original's: a repair that turns `range(K // BLOCK_K)` into one is what counts, not a
    loop over three colour channels the author wrote."""
    found: dict[str, int] = {}
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and is_kernel(fn)):
            continue
        for loop in ast.walk(fn):
            call = loop.iter if isinstance(loop, ast.For) else None
            if not isinstance(call, ast.Call) or not call.args:
                continue
            if ast.unparse(call.func).split(".")[-1] not in ("range", "static_range"):
                continue
            if all(_numbers_only(a) for a in call.args):
                found.setdefault(f"{fn.name}: {ast.unparse(call)}", loop.lineno)
    return found


def _foreign_trip_counts(tree: ast.Module) -> dict[str, tuple[int, str, str]]:
    """Each tiled kernel loop whose trip count reads size parameters none of which bounds the index it steps:
    `for i in range(N)` over `k = i * BLOCK_K + offs` masked by `k < K`. As code -> (line, the count's sizes,
    the mask's sizes). A loop over the wrong dimension passes wherever that dimension is large enough."""
    found: dict[str, tuple[int, str, str]] = {}
    for fn in ast.walk(tree):
        if not (isinstance(fn, ast.FunctionDef) and is_kernel(fn)):
            continue
        annotated = [a for a in fn.args.args if a.annotation is not None]
        constexpr = {a.arg for a in annotated if "constexpr" in ast.unparse(a.annotation)}  # type: ignore[arg-type]
        sizes = {a.arg for a in fn.args.args} - constexpr
        direct: dict[str, set[str]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                read = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            direct.setdefault(n.id, set()).update(read)

        def flow(names: set[str], direct: dict[str, set[str]] = direct) -> set[str]:
            seen, todo = set(names), list(names)
            while todo:
                for nxt in direct.get(todo.pop(), ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
            return seen

        lanes = {
            n.id
            for node in ast.walk(fn)
            if isinstance(node, ast.Assign) and "arange" in ast.unparse(node.value)
            for t in node.targets
            for n in ast.walk(t)
            if isinstance(n, ast.Name)
        }
        for loop in ast.walk(fn):
            if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)):
                continue
            call = loop.iter
            if not (isinstance(call, ast.Call) and call.args):
                continue
            if ast.unparse(call.func).split(".")[-1] not in ("range", "static_range"):
                continue
            bound = flow({n.id for a in call.args for n in ast.walk(a) if isinstance(n, ast.Name)}) & sizes
            var = loop.target.id
            # A tiled loop only: the index it steps is `i * BLOCK + tl.arange(...)` (a K loop), so its trip
            # count must cover the masked size in tiles.
            tiles = []
            for node in ast.walk(loop):
                if isinstance(node, ast.Assign):
                    read = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                    if var in read and ("arange" in ast.unparse(node.value) or flow(read - {var}) & lanes):
                        tiles.append(node)
            if not tiles:
                continue
            stepped = {name for name in direct if var in flow({name})} | {var}
            masked: set[str] = set()
            for cmp in ast.walk(loop):
                if isinstance(cmp, ast.Compare) and len(cmp.ops) == 1 and isinstance(cmp.ops[0], ast.Lt):
                    left = {n.id for n in ast.walk(cmp.left) if isinstance(n, ast.Name)}
                    right = {n.id for n in ast.walk(cmp.comparators[0]) if isinstance(n, ast.Name)}
                    if left & stepped:
                        masked |= flow(right)
            masked &= sizes
            if bound and masked and not bound & masked:
                code = f"{fn.name}: {ast.unparse(call)}"
                found.setdefault(code, (loop.lineno, ", ".join(sorted(bound)), ", ".join(sorted(masked))))
    return found


def _numbers_only(node: ast.expr) -> bool:
    allowed = ast.Constant | ast.BinOp | ast.UnaryOp | ast.operator | ast.unaryop
    return all(
        isinstance(n, allowed) and not (isinstance(n, ast.Constant) and not isinstance(n.value, int | float))
        for n in ast.walk(node)
    )


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
        self.default_deny()
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
                    self.add("torch_compute", "cheat", node, f"{snippet(node)} used as a value ({q})")

    def whole_file(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                self.import_rules(node)
            elif isinstance(node, ast.Call):
                self.call_rules(node)
            elif isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRS:
                if node.attr != "modules" or self.qualify(node.value) == "sys":
                    self.add("reads_frames_or_globals", "cheat", node, snippet(node))
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
                        self.add("caches_output", "cheat", d, f"@{snippet(d)} on {node.name}")

    def import_rules(self, node: ast.Import | ast.ImportFrom) -> None:
        names = [a.name for a in node.names]
        modules = names if isinstance(node, ast.Import) else [node.module or ""]
        roots = {m.split(".")[0] for m in modules if m}
        text = snippet(node)
        if roots - ALLOWED_IMPORTS:
            self.add("import_not_allowed", "cheat", node, text)
        full = modules if isinstance(node, ast.Import) else [f"{node.module}.{n}" for n in names]
        if any(self.denied_torch(m) for m in full):
            self.add("torch_route_not_allowed", "cheat", node, text)
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
        text = snippet(node)
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
            if self.qualify(inner) == "os.environ" and inner is not target:
                return  # os.environ["X"] = "1": the candidate's own environment, read by no check
            if q is not None and q.split(".")[0] in self.imported | {
                "torch",
                "numpy",
                "time",
                "sys",
                "triton",
            }:
                self.add("monkeypatch", "cheat", node, snippet(node))

    def denied_torch(self, q: str) -> str | None:
        """Why a dotted torch path is off limits (private, raw ATen, TorchScript, custom ops...), or None."""
        parts = q.split(".")
        if parts[0] != "torch" or len(parts) < 2:
            return None
        if any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts[1:]):
            return "private torch internals"
        if parts[1] == "autograd" and len(parts) > 2 and parts[2] not in ALLOWED_AUTOGRAD:
            return "torch.autograd"
        if parts[1] == "utils" and len(parts) > 2 and parts[2] not in ("checkpoint",):
            return None if parts[2] in ("data",) else "torch.utils"
        for denied in DENIED_TORCH:
            d = denied.split(".")
            if parts[1 : 1 + len(d)] == d:
                return f"torch.{denied}"
        return None

    def default_deny(self) -> None:
        """What no candidate may do, wherever in the file: routes around the glue allowlist and the checks."""
        docstrings = {
            id(n.body[0].value)
            for n in ast.walk(self.tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)
            and n.body
            and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
        }
        # os.environ["X"] = "1": a write (harmless); the key of it is not a read of the environment.
        env_writes = {
            id(sub)
            for n in ast.walk(self.tree)
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
            for sub in ast.walk(n)
        }
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                q = self.qualify(node) or ""
                why = self.denied_torch(q)
                if why and not self.denied_torch(self.qualify(node.value) or ""):
                    self.add("torch_route_not_allowed", "cheat", node, f"{snippet(node)} ({why})")
                if node.attr in DEVICE_ATTRS or (node.attr == "type" and is_device_expr(node.value)):
                    if self.in_branch_test(node):
                        self.add("device_branch", "cheat", node, "branches on the device: " + snippet(node))
                if node.attr in VALUE_READS and q == "":
                    self.add("reads_tensor_values", "cheat", node, snippet(node))
                self.os_sys_rule(node, q, env_writes)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id in ("getattr", "setattr", "delattr") and not self.is_called(node):
                    self.add("obfuscated_access", "cheat", node, f"{node.id} used as a value")
            elif (
                isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            ):
                written = id(node) in env_writes
                if ("TRITON_INTERPRET" in node.value and not written) or "/proc" in node.value:
                    self.add("device_branch", "cheat", node, f"reads {node.value!r}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in HOOKS
            ):
                self.add(
                    "installs_hook",
                    "cheat",
                    node,
                    "code that runs outside forward's checks: " + snippet(node),
                )
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                fid = node.func.id
                if fid in ("open", "memoryview", "breakpoint", "input"):
                    self.add("dynamic_code", "cheat", node, snippet(node))
                elif fid == "type" and len(node.args) == 3:
                    self.add("dynamic_code", "cheat", node, "class built by type(): " + snippet(node))
                elif fid == "getattr" and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant):
                    self.add("obfuscated_access", "cheat", node, snippet(node))
                elif fid in ("setattr", "delattr") and node.args and not is_self(node.args[0]):
                    self.add("monkeypatch", "cheat", node, snippet(node))
                elif fid in ("float", "int", "bool") and node.args and self.reads_tensor(node.args[0]):
                    self.add("reads_tensor_values", "cheat", node, snippet(node))
            elif isinstance(node, ast.ClassDef):
                self.class_rules(node)
            elif isinstance(node, ast.FunctionDef) and node.name in self.kernels:
                self.kernel_body(node)
        self.module_level()

    def os_sys_rule(self, node: ast.Attribute, q: str, env_writes: set[int]) -> None:
        """os and sys: paths, flags, versions; never spawning, files, frames or reading the environment."""
        base = self.qualify(node.value) or ""
        if base not in ("os", "sys"):
            return  # judged once, at the outermost os.X / sys.X
        if q == "os.environ":
            if id(node) not in env_writes:
                self.add("reads_environment", "cheat", node, "reads the environment: " + snippet(node))
        elif base == "os" and not any(q == a or q.startswith(a + ".") for a in ALLOWED_OS):
            self.add("process_or_files", "cheat", node, snippet(node))
        elif base == "sys" and q not in ALLOWED_SYS and node.attr not in FRAME_ATTRS:
            self.add("process_or_files", "cheat", node, snippet(node))

    def is_called(self, name: ast.Name) -> bool:
        return any(isinstance(n, ast.Call) and n.func is name for n in ast.walk(self.tree))

    def in_branch_test(self, target: ast.AST) -> bool:
        """Whether a node decides a branch (an `assert x.is_cuda` only refuses to run: not a branch)."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assert) and any(n is target for n in ast.walk(node)):
                return False
        for node in ast.walk(self.tree):
            if isinstance(node, ast.If | ast.IfExp | ast.While) and any(
                n is target for n in ast.walk(node.test)
            ):
                return True
            if isinstance(node, ast.BoolOp | ast.Compare | ast.Dict | ast.Subscript) and any(
                n is target for n in ast.walk(node)
            ):
                return True
        return False

    def reads_tensor(self, node: ast.AST) -> bool:
        """float(x[i]), int(t.sum()): a tensor element pulled into Python (not x.shape[i] or x.size(0))."""
        if isinstance(node, ast.Constant) or isinstance(node, ast.Attribute) and node.attr in META_ATTRS:
            return False
        text = ast.unparse(node)
        if any(k in text for k in (".shape", ".size(", ".numel(", ".stride(", "len(", ".dim(", "triton.")):
            return False
        return isinstance(node, ast.Subscript) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in COMPUTE_METHODS | TENSOR_METHODS
        )

    def class_rules(self, cls: ast.ClassDef) -> None:
        for base in cls.bases:
            q = self.qualify(base) or ""
            name = base.id if isinstance(base, ast.Name) else None
            if (
                q in ("torch.nn.Module", "torch.autograd.Function")
                or name in self.classes
                or name == "object"
            ):
                continue
            if q in ("torch.Tensor", "torch.nn.Parameter") or q.endswith(".Tensor"):
                self.add("tensor_subclass", "cheat", cls, f"class {cls.name}({snippet(base)})")
            elif self.inherits_model(base, set()):
                continue  # inherits_reference, reported by model_checks
            elif q.startswith("torch.") or q.startswith("triton."):
                self.add("inherits_not_allowed", "cheat", cls, f"class {cls.name}({snippet(base)})")
            elif not (q.startswith("typing.") or q.startswith("enum.") or q.startswith("abc.")):
                self.add("inherits_not_allowed", "cheat", cls, f"class {cls.name}({snippet(base)})")
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name in (
                "__torch_function__", "__torch_dispatch__", "__getattr__", "__getattribute__", "__del__",
            ):  # fmt: skip
                self.add("tensor_subclass", "cheat", stmt, f"{cls.name} defines {stmt.name}")

    def kernel_body(self, fn: ast.FunctionDef) -> None:
        """A @triton.jit body may call only tl.*, triton.*, other jitted functions and a few builtins."""
        local = {a.arg for a in fn.args.args} | {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            q = self.qualify(func) or ""
            if q.startswith("triton."):
                continue
            if isinstance(func, ast.Name):
                if func.id in self.kernels or func.id in KERNEL_BUILTINS:
                    continue
            elif isinstance(func, ast.Attribute) and not q:
                root = func
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and (root.id in local or root.id in self.kernels):
                    continue  # x.to(tl.float32), acc.dtype, a method of a Triton value
                if not isinstance(root, ast.Name):
                    continue
            self.add("kernel_calls_host_code", "cheat", node, f"in @triton.jit {fn.name}: {snippet(node)}")

    def module_level(self) -> None:
        """Module-level code and class bodies run at import, outside every check: glue only."""
        stmts: list[ast.stmt] = []
        for stmt in self.tree.body:
            if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test):
                continue  # `if __name__ == "__main__":` never runs when the harness imports the file
            if isinstance(stmt, ast.ClassDef):
                stmts += [b for b in stmt.body if not isinstance(b, ast.FunctionDef)]
            elif not isinstance(stmt, ast.FunctionDef | ast.Import | ast.ImportFrom):
                stmts.append(stmt)
        if stmts:
            body = ast.FunctionDef(
                name="<module>",
                args=ast.arguments([], [], None, [], [], None, []),
                body=stmts,
                decorator_list=[],
                returns=None,
                type_params=[],
            )
            FunctionScan(self, body, "module", {}, set()).run()

    def is_compute_path(self, q: str) -> bool:
        """Whether a dotted torch/numpy path names compute rather than glue."""
        parts = q.split(".")
        if parts[0] != "torch":
            return False
        if len(parts) == 1 or parts[1] in DEVICE_MODULES:
            return False
        if self.denied_torch(q):
            return True
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
                self.add("inherits_reference", "cheat", model_new, f"class ModelNew({snippet(base)})")
        launches = 0
        nn_attrs = self.nn_attributes(model_new)
        scanned: set[int] = set()
        for fn, phase in self.reachable(model_new):
            body = FunctionScan(self, fn, phase, nn_attrs, self.tensor_attrs(model_new))
            launches += body.run()
            scanned.add(id(fn))
            if phase == "forward":
                self.value_references(fn)
        # Default-deny: a helper reached by a route the name walk cannot follow (a dict, a hook, a grid
        # callable, a pickled or aliased function) is held to the same rules as forward.
        for fn, phase, cls in self.every_function():
            if id(fn) in scanned or is_kernel(fn):
                continue
            attrs = (self.nn_attributes(cls), self.tensor_attrs(cls)) if cls is not None else ({}, set())
            FunctionScan(self, fn, phase, *attrs).run()
            self.value_references(fn)
        if launches == 0:
            self.add("no_kernel_launch", "cheat", model_new, "ModelNew's forward never launches a kernel")

    def every_function(self) -> Iterator[tuple[ast.FunctionDef, str, ast.ClassDef | None]]:
        for stmt in self.tree.body:
            if isinstance(stmt, ast.FunctionDef):
                yield stmt, "forward", None
            elif isinstance(stmt, ast.ClassDef):
                for m in ast.walk(stmt):
                    if isinstance(m, ast.FunctionDef):
                        yield m, "init" if m.name == "__init__" else "forward", stmt

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
            if (id(fn), phase) in seen or is_kernel(fn):
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
