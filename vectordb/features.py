"""Static retrieval features: the Triton constructs a candidate uses, the operator category of a reference.

Both read source with `ast` only; neither imports nor runs it.
"""

from __future__ import annotations

import ast

CATEGORIES: tuple[str, ...] = (
    "activation",
    "elementwise",
    "reduction",
    "normalization",
    "softmax_attention",
    "matmul",
    "convolution",
    "pooling",
    "loss",
    "scan_index",
)

# Triton calls worth naming as features (tl.<name>).
_TL_CALLS = {
    "max", "min", "sum", "dot", "cumsum", "cumprod", "atomic_add", "atomic_max", "exp", "exp2", "log",
    "where", "sqrt", "rsqrt", "argmax", "argmin", "abs", "sigmoid", "erf", "tanh", "fdiv", "static_range",
}  # fmt: skip

# Torch names the reference calls, most specific category first.
_CATEGORY_OPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("softmax_attention", ("softmax", "log_softmax", "scaled_dot_product_attention", "logsumexp",
                           "MultiheadAttention", "Softmax", "LogSoftmax")),
    ("loss", ("cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
              "binary_cross_entropy", "CrossEntropyLoss", "MSELoss", "KLDivLoss", "hinge_embedding_loss",
              "cosine_embedding_loss", "triplet_margin_loss", "NLLLoss", "HuberLoss", "SmoothL1Loss")),
    ("normalization", ("layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm", "LayerNorm",
                       "BatchNorm1d", "BatchNorm2d", "GroupNorm", "InstanceNorm2d", "RMSNorm", "normalize")),
    ("convolution", ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "Conv1d", "Conv2d",
                     "Conv3d", "ConvTranspose2d", "ConvTranspose1d")),
    ("pooling", ("max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d", "MaxPool1d",
                 "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d", "avg_pool3d", "max_pool3d")),
    ("scan_index", ("cumsum", "cumprod", "cummax", "cummin", "gather", "scatter", "index_select", "argmax",
                    "argmin", "embedding", "Embedding", "take_along_dim", "masked_fill", "flip", "topk")),
    ("matmul", ("matmul", "mm", "bmm", "addmm", "linear", "Linear", "einsum", "baddbmm", "outer")),
    ("activation", ("relu", "gelu", "silu", "sigmoid", "tanh", "leaky_relu", "elu", "selu", "softplus",
                    "hardtanh", "hardsigmoid", "hardswish", "mish", "softsign", "relu6", "GELU", "ReLU",
                    "SiLU", "LeakyReLU", "ELU", "Softplus", "Mish", "Hardtanh", "celu", "Tanh", "Sigmoid")),
    ("reduction", ("sum", "mean", "amax", "amin", "max", "min", "prod", "norm", "var", "std", "all", "any")),
)  # fmt: skip


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _kwarg(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _constexpr_params(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for a in fn.args.args:
                if a.annotation is not None and "constexpr" in ast.unparse(a.annotation):
                    names.add(a.arg)
    return names


def code_features(source: str) -> list[str]:
    """Sorted feature names such as `tl.max`, `masked_load`, `load_other_zero`, `floordiv_grid`."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: set[str] = set()
    constexprs = _constexpr_params(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func) or ""
            short = name.split(".")[-1]
            if name.startswith(("tl.", "triton.language.")) and short in _TL_CALLS:
                found.add(f"tl.{short}")
            if short == "load" and name.startswith("tl"):
                if _kwarg(node, "mask") is not None or len(node.args) > 1:
                    found.add("masked_load")
                other = _kwarg(node, "other")
                if isinstance(other, ast.Constant) and other.value == 0:
                    found.add("load_other_zero")
            unmasked = _kwarg(node, "mask") is None and len(node.args) < 3
            if short == "store" and name.startswith("tl") and unmasked:
                found.add("unmasked_store")
            if short == "cdiv":
                found.add("cdiv")
            if short in ("to", "astype") and any("float16" in ast.unparse(a) for a in node.args):
                found.add("fp16_cast")
            if short in ("zeros", "full") and name.startswith("tl") and "float16" in ast.unparse(node):
                found.add("fp16_accumulator")
            if short == "contiguous":
                found.add("contiguous")
            if short == "stride":
                found.add("stride")
            if short == "empty" or short == "empty_like":
                found.add("empty_output")
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            # kernel[grid](...): a floor division inside the grid expression.
            if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv) for n in ast.walk(node.slice)):
                found.add("floordiv_grid")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv):
            if isinstance(node.right, ast.Name) and node.right.id in constexprs:
                found.add("constexpr_divisor")
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.LtE) for op in node.ops):
            found.add("le_compare")
        elif isinstance(node, ast.For) and isinstance(node.iter, ast.Call):
            if (_dotted(node.iter.func) or "").endswith("range"):
                found.add("loop")
    return sorted(found)


def infer_category(reference_source: str) -> str | None:
    """The operator category of a reference from the torch names it uses; None when nothing matches."""
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return None
    # Only the model's own code: get_inputs() calls torch.randn and friends, which say nothing.
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    used: set[str] = set()
    arithmetic = False
    for node in (n for c in classes for n in ast.walk(c)):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name:
                used.add(name.split(".")[-1])
        arithmetic = arithmetic or isinstance(node, ast.BinOp)
    for category, ops in _CATEGORY_OPS:
        if used & set(ops):
            return category
    return "elementwise" if arithmetic or used - {"__init__", "super"} else None
