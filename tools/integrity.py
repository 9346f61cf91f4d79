"""Static integrity checks over a candidate: does ModelNew really launch its own kernel, or does it cheat?

A first, static layer of the integrity gate: it reads the code (never runs it) and flags the common reward
hacks — calling torch compute instead of the kernel, importing the reference, dynamic code, fallbacks —
plus patches that rewrite most of the kernel (regeneration, not repair).
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass
from typing import Any, Literal

from kernel_medic.tools.edits import changed_fraction

Severity = Literal["cheat", "suspicious"]

# torch functions that only allocate, describe or convert: glue a wrapper legitimately needs.
GLUE = {
    "empty",
    "empty_like",
    "empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "arange",
    "tensor",
    "as_tensor",
    "as_strided",
    "is_tensor",
    "is_floating_point",
    "finfo",
    "iinfo",
    "get_default_dtype",
    "device",
    "Size",
    "no_grad",
    "inference_mode",
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int32",
    "int64",
    "int8",
    "uint8",
    "bool",
    "cdiv",
    "next_power_of_2",
    "synchronize",
    "current_device",
    "get_device_properties",
    "device_count",
    "is_available",
    "stream",
    "current_stream",
}
# Tensor methods that compute the operator (as opposed to views, casts and metadata).
COMPUTE_METHODS = {
    "sum",
    "mean",
    "var",
    "std",
    "softmax",
    "log_softmax",
    "exp",
    "log",
    "matmul",
    "mm",
    "bmm",
    "relu",
    "sigmoid",
    "tanh",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "norm",
    "cumsum",
    "cumprod",
    "prod",
    "gelu",
    "silu",
    "conv1d",
    "conv2d",
    "conv3d",
    "layer_norm",
    "logsumexp",
    "addmm",
    "baddbmm",
    "einsum",
    "sort",
    "topk",
    "clamp",
    "abs",
    "sqrt",
    "rsqrt",
    "pow",
    "erf",
    "softplus",
    "mish",
    "hardtanh",
}
NN_CONTAINERS = {
    "Module",
    "Parameter",
    "ParameterList",
    "ParameterDict",
    "ModuleList",
    "ModuleDict",
    "Identity",
}


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    line: int
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def static_findings(
    source: str, original: str | None = None, regeneration_fraction: float = 0.6
) -> list[Finding]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [Finding("unparsable", "cheat", exc.lineno or 0, str(exc))]
    findings: list[Finding] = []
    model_new = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            if any(n and n.split(".")[0] in ("reference", "importlib") for n in names):
                findings.append(
                    Finding("imports_reference_or_importlib", "cheat", node.lineno, ast.unparse(node))
                )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("eval", "exec", "__import__", "compile"):
                findings.append(Finding("dynamic_code", "cheat", node.lineno, ast.unparse(node)[:120]))
            if node.func.id in ("globals", "getattr") and node.args and _mentions_torch(node.args[0]):
                findings.append(
                    Finding("obfuscated_torch_access", "cheat", node.lineno, ast.unparse(node)[:120])
                )
    if model_new is None:
        return findings + [Finding("no_model_new", "cheat", 0, "no class ModelNew")]
    if any(isinstance(b, ast.Name) and b.id == "Model" for b in model_new.bases):
        findings.append(Finding("inherits_reference", "cheat", model_new.lineno, "class ModelNew(Model)"))
    launches = 0
    for fn in _reachable_functions(tree, model_new):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
                launches += 1  # kernel[grid](...)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                findings += _call_findings(node)
            elif isinstance(node, ast.Try) and fn.name != "__init__":
                findings.append(
                    Finding(
                        "try_except_fallback", "suspicious", node.lineno, "try/except in the forward path"
                    )
                )
    if launches == 0:
        findings.append(
            Finding("no_kernel_launch", "cheat", model_new.lineno, "ModelNew never launches a kernel")
        )
    if original is not None and changed_fraction(original, source) > regeneration_fraction:
        share = changed_fraction(original, source)
        findings.append(
            Finding("regeneration", "suspicious", 1, f"the patch changes {share:.0%} of the kernel")
        )
    return findings


def verdict(findings: list[Finding]) -> Literal["clean", "cheat", "suspicious"]:
    if any(f.severity == "cheat" for f in findings):
        return "cheat"
    return "suspicious" if findings else "clean"


def _mentions_torch(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id in ("torch", "F", "nn") for n in ast.walk(node))


def _call_findings(call: ast.Call) -> list[Finding]:
    func = call.func
    assert isinstance(func, ast.Attribute)
    chain = ast.unparse(func)
    root = chain.split(".")[0]
    if (
        root in ("torch", "F")
        and func.attr not in GLUE
        and not chain.startswith(("torch.cuda.", "torch.npu."))
    ):
        return [Finding("torch_compute", "cheat", call.lineno, chain)]
    if root == "nn" and func.attr not in NN_CONTAINERS:
        return [Finding("delegates_to_nn_module", "cheat", call.lineno, chain)]
    if root not in ("torch", "F", "nn", "triton", "tl") and func.attr in COMPUTE_METHODS:
        return [Finding("torch_compute", "cheat", call.lineno, chain)]
    return []


def _reachable_functions(tree: ast.Module, model_new: ast.ClassDef) -> list[ast.FunctionDef]:
    """ModelNew's methods plus the module-level (non-kernel) functions they call, transitively."""
    module_fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and not _is_kernel(n)}
    todo = [n for n in model_new.body if isinstance(n, ast.FunctionDef)]
    seen: dict[str, ast.FunctionDef] = {}
    while todo:
        fn = todo.pop()
        key = f"{id(fn)}"
        if key in seen:
            continue
        seen[key] = fn
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in module_fns:
                todo.append(module_fns[node.func.id])
    return list(seen.values())


def _is_kernel(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) or "autotune" in ast.unparse(d) for d in fn.decorator_list)
