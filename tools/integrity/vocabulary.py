"""The integrity gate's vocabulary: what glue is, what is denied, and small helpers over the AST.

Shared by the static scan (`static_checks.py`, `function_scan.py`); the dispatcher-level allowlist of the
dynamic layer lives beside the code that enforces it (`jobs.py`).
"""

from __future__ import annotations

import ast
from typing import Literal

# cheat and suspicious refuse; warning (a pre-existing finding the problem never reaches) and note (glue
# worth seeing, such as a host epilogue over kernel-written partials) are reported and do not.
Severity = Literal["cheat", "suspicious", "warning", "note"]

# torch names that only allocate, describe, convert or lay out memory: glue a wrapper legitimately needs.
GLUE = {
    # allocation
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "as_tensor", "as_strided", "from_numpy", "Tensor", "Size", "Generator",
    # metadata and dtypes
    "is_tensor", "is_floating_point", "is_complex", "numel", "finfo", "iinfo", "get_default_dtype",
    "promote_types", "result_type", "device", "dtype", "float32", "float16", "bfloat16", "float64", "int32",
    "int64", "int16", "int8", "uint8", "bool", "float", "half", "double", "long", "int", "layout", "strided",
    "contiguous_format", "channels_last", "preserve_format", "broadcast_shapes",
    # views and layout
    "reshape", "view_as_real", "view_as_complex", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose",
    "permute", "narrow", "split", "chunk", "unbind", "movedim", "broadcast_to", "broadcast_tensors", "cat",
    "concat", "stack", "pad",
    # launch helpers and contexts
    "cdiv", "next_power_of_2", "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "synchronize",
    "current_device", "get_device_properties", "get_device_capability", "device_count", "is_available",
    "set_device",
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
    "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d",
    "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "RMSNorm", "PReLU",
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
# Default-deny: the modules a candidate may import. Anything else (numpy, os, sys, pickle, subprocess,
# ctypes, importlib, the harness's own packages...) is a cheat: compute outside torch, or a way around the
# checks.
ALLOWED_IMPORTS = {
    "torch", "triton", "math", "typing", "__future__", "dataclasses", "enum", "abc", "functools",
    "itertools", "collections", "numbers", "warnings", "logging", "time", "os", "sys",
}  # fmt: skip
# What of os and sys a candidate may touch (generated files import them for paths and flags): anything else
# (spawning, files, descriptors, sys.modules, frames, tracing) is a finding, and so is reading the
# environment (a branch on TRITON_INTERPRET); setting a variable is harmless.
ALLOWED_OS = {"os.path", "os.sep", "os.cpu_count", "os.environ"}
ALLOWED_SYS = {"sys.version_info", "sys.version", "sys.maxsize", "sys.float_info", "sys.byteorder"}
# torch namespaces that reach compute or the checks by a route the glue allowlist cannot see: raw ATen
# overloads, TorchScript, custom ops, compilers, dispatch and function modes, autograd, serialization.
DENIED_TORCH = {
    "ops", "library", "jit", "compile", "fx", "func", "overrides", "hub", "package", "load", "save",
    "multiprocessing", "distributed", "export", "vmap", "Tensor.register_hook", "autocast",
}  # fmt: skip
# torch.autograd.Function wraps a kernel launch (its forward is scanned like any helper); the rest computes.
ALLOWED_AUTOGRAD = {"Function", "no_grad", "inference_mode", "enable_grad", "set_grad_enabled"}
# Builtins a @triton.jit body may call besides tl.*, triton.* and other jitted functions.
KERNEL_BUILTINS = {"range", "min", "max", "len", "int", "float", "bool", "isinstance", "print", "tuple"}
# Host-side reads of a tensor's values: the way into Python or numpy compute.
VALUE_READS = {"item", "tolist", "numpy", "__array__", "__float__", "__int__", "__index__", "storage"}
# Callbacks torch or Triton run around forward or a launch, outside the code the scan follows.
HOOKS = {
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "register_hook",
    "register_backward_hook", "register_module_forward_hook", "register_module_forward_pre_hook",
    "add_pre_run_hook", "register_state_dict_pre_hook", "register_load_state_dict_post_hook",
    "_register_load_state_dict_pre_hook", "register_parametrization",
}  # fmt: skip
DEVICE_ATTRS = {"is_cuda", "is_cpu", "is_xpu", "is_mps", "is_meta"}
# Reductions a host may apply to per-block partials a kernel wrote (a note, not a finding).
EPILOGUE_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "logsumexp"}
ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult, ast.BitAnd,
          ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)  # fmt: skip


def is_kernel(fn: ast.FunctionDef) -> bool:
    return any(any(k in ast.unparse(d) for k in ("jit", "autotune", "heuristics")) for d in fn.decorator_list)


ALLOCATORS = {"empty", "empty_like", "zeros", "zeros_like", "full", "full_like", "new_empty", "new_zeros"}


def is_count(node: ast.AST) -> bool:
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


def snippet(node: ast.AST) -> str:
    text = ast.unparse(node).replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "..."


def is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def is_device_expr(node: ast.AST) -> bool:
    """`x.device` or a name holding a device: `.type` of it names the backend."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "device"
        or (isinstance(node, ast.Name) and "device" in node.id)
    )


def self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def literal_size(node: ast.AST) -> bool:
    """A literal a shape could be compared with to special-case the test: 1000, (16, 1000), Size([...])."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool) and node.value > 8
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(literal_size(e) for e in node.elts)
    if isinstance(node, ast.Call):
        return any(literal_size(a) for a in node.args)
    return False
