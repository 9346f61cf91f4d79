"""Rules over one function on the candidate's path (`__init__`, forward, a helper, module-level code)."""

from __future__ import annotations

import ast
from typing import Any

from kernel_medic.tools.integrity.vocabulary import (
    ALLOCATORS,
    ARITH,
    COMPUTE_METHODS,
    DEVICE_MODULES,
    EPILOGUE_REDUCTIONS,
    INIT_ONLY,
    META_ATTRS,
    NN_CONTAINERS,
    RNG_NAMES,
    TENSOR_METHODS,
    WEIGHT_HOLDERS,
    Severity,
    is_count,
    literal_size,
    self_attr,
    snippet,
)


class FunctionScan:
    """Rules over one function on ModelNew's path; `phase` is init (__init__) or forward."""

    def __init__(
        self,
        scanner: Any,  # the module scan (static_checks._Scanner): names, findings
        fn: ast.FunctionDef,
        phase: str,
        nn_attrs: dict[str, str],
        tensor_attrs: set[str],
    ) -> None:
        self.s = scanner
        self.fn = fn
        self.module = phase == "module"  # module-level code and class bodies: forward's rules, at import
        self.phase = "forward" if self.module else phase
        self.nn_attrs = nn_attrs
        self.tensor_attrs = tensor_attrs
        self.tensors: set[str] = set()
        self.shapes: set[str] = set()

    def run(self) -> int:
        self.infer_names()
        if self.phase == "init":
            self.deferred()
        launches = 0
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Subscript):
                    launches += 1
                    if self.phase == "init":
                        self.add("computes_in_init", node, "kernel launch in __init__: " + snippet(node))
                elif self.is_kernel_call(node):
                    launches += 1
                else:
                    self.call(node)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ARITH) and self.phase == "forward":
                if self.is_mean_of_kernel_output(node):
                    continue  # a kernel's sum divided by the element count: the mean's last step, on the host
                if (
                    isinstance(node.op, ast.MatMult)
                    or self.is_tensor(node.left)
                    or self.is_tensor(node.right)
                ):
                    self.add("tensor_arithmetic", node, snippet(node))
            elif isinstance(node, ast.UnaryOp) and self.phase == "forward" and self.is_tensor(node.operand):
                if not isinstance(node.op, ast.Not):
                    self.add("tensor_arithmetic", node, snippet(node))
            elif isinstance(node, ast.AugAssign) and self.phase == "forward" and self.is_tensor(node.target):
                self.add("tensor_arithmetic", node, snippet(node))
            elif isinstance(node, ast.Compare) and self.phase == "forward":
                self.compare(node)
            elif isinstance(node, ast.Try) and self.phase == "forward" and not self.module:
                self.try_rule(node)
            elif isinstance(node, ast.Assign | ast.AnnAssign) and self.phase == "forward":
                self.state_write(node)
            elif isinstance(node, ast.Return) and self.phase == "forward" and node.value is not None:
                value = node.value
                while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                    value = value.func.value
                if self_attr(value) is not None and self_attr(value) not in self.nn_attrs:
                    self.add("returns_stored_tensor", node, snippet(node))
            elif isinstance(node, ast.Global) and self.phase == "forward":
                self.s.add("caches_output", "suspicious", node, snippet(node))
            elif isinstance(node, ast.If | ast.IfExp | ast.While) and self.phase == "forward":
                self.branch(node.test)
        return launches

    def deferred(self) -> None:
        """Lambdas and nested functions made in __init__ run later, as forward: scan them with its rules."""
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Lambda):
                body: list[ast.stmt] = [ast.Return(node.body, lineno=node.lineno, col_offset=0)]
                fn = ast.FunctionDef(
                    name="<lambda>", args=node.args, body=body, decorator_list=[], lineno=node.lineno
                )
            elif isinstance(node, ast.FunctionDef) and node is not self.fn:
                fn = node
            else:
                continue
            scan = FunctionScan(self.s, fn, "forward", self.nn_attrs, self.tensor_attrs)
            scan.tensors |= {a.arg for a in fn.args.args if a.arg != "self"}
            scan.run()

    def add(self, rule: str, node: ast.AST, evidence: str, severity: Severity = "cheat") -> None:
        if self.module and rule in (
            "torch_compute", "tensor_method_compute", "tensor_arithmetic", "delegates_to_nn_module",
        ):  # fmt: skip
            rule = "computes_at_import"
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
                    if self.is_tensor(node.value):
                        self.tensors.update(names)  # torch.empty(x.shape) is a tensor, not a size
                    elif self.is_shape(node.value):
                        self.shapes.update(names)
                elif (
                    isinstance(node, ast.For)
                    and isinstance(node.target, ast.Name)
                    and self.is_tensor(node.iter)
                ):
                    self.tensors.add(node.target.id)

    def is_epilogue(self, node: ast.Call) -> bool:
        """`torch.sum(partials, dim=1)` / `partials.sum(1)` over a buffer allocated here, kernel-written."""
        func = node.func
        q = self.s.qualify(func) or ""
        if q.startswith("torch.") and q.split(".")[-1] in EPILOGUE_REDUCTIONS and node.args:
            target = node.args[0]
        elif isinstance(func, ast.Attribute) and not q and func.attr in EPILOGUE_REDUCTIONS:
            target = func.value
        else:
            return False
        return isinstance(target, ast.Name) and target.id in self.kernel_written()

    def kernel_written(self) -> set[str]:
        """Names bound to a fresh allocation (its shape may come from an input) that a launch receives."""
        allocated = {
            t.id
            for a in ast.walk(self.fn)
            if isinstance(a, ast.Assign)
            and isinstance(a.value, ast.Call)
            and (
                (self.s.qualify(a.value.func) or "").split(".")[-1] in ALLOCATORS
                or isinstance(a.value.func, ast.Attribute)
                and a.value.func.attr in ("new_empty", "new_zeros", "new_full")
            )
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
        return allocated & launched

    def is_mean_of_kernel_output(self, node: ast.BinOp) -> bool:
        """`out / n`: `out` allocated here and handed to a kernel launch, `n` a size (a mean's last step)."""
        if not isinstance(node.op, ast.Div):
            return False
        size = (self.is_shape(node.right) and not self.is_tensor(node.right)) or self.is_count(node.right)
        if isinstance(node.left, ast.Call) and self.is_epilogue(node.left):
            return size
        return isinstance(node.left, ast.Name) and node.left.id in self.kernel_written() and size

    def is_count(self, node: ast.AST) -> bool:
        """`(t != ignore).sum()` or a name bound to it: how many entries count (a mean's divisor)."""
        if isinstance(node, ast.Name):
            return any(
                isinstance(a, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == node.id for t in a.targets)
                and self.is_count(a.value)
                for a in ast.walk(self.fn)
            )
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "sum"
            and is_count(node.func.value)
        )

    def is_tensor(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Subscript):
            return self.is_tensor(node.value)
        if isinstance(node, ast.Attribute):
            if node.attr in META_ATTRS:
                return False
            attr = self_attr(node)
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
        text = snippet(node)
        if q.startswith("torch.nn.") and leaf[:1].isupper() and leaf not in NN_CONTAINERS:
            if leaf not in WEIGHT_HOLDERS or self.phase == "forward":
                self.add("delegates_to_nn_module", node, text)
            return
        if q.startswith("torch.nn.") and leaf in NN_CONTAINERS:
            return  # nn.Parameter(torch.ones(d)) and friends hold weights; their arguments are checked apart
        if q.startswith("torch.nn.init.") and self.phase == "init":
            return
        if self.is_epilogue(node):
            self.s.add("host_epilogue", "note", node, "host reduces kernel-written partials: " + text)
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
        attr = self_attr(func)
        if attr is not None and attr in self.nn_attrs:
            self.add("delegates_to_nn_module", node, f"{text} ({self.nn_attrs[attr]})")
            return
        if isinstance(func, ast.Attribute) and attr is None:
            if func.attr == "forward" and self_attr(func.value) in self.nn_attrs:
                self.add("delegates_to_nn_module", node, text)
                return
            receiver = self.s.qualify(func.value)
            if func.attr == "sum" and is_count(func.value):
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
        if any(self.is_shape(s) for s in sides) and any(literal_size(s) for s in sides):
            self.add("shape_special_case", node, snippet(node))

    def branch(self, test: ast.AST) -> None:
        for sub in ast.walk(test):
            if isinstance(sub, ast.Compare) and all(isinstance(op, ast.Is | ast.IsNot) for op in sub.ops):
                continue
            if isinstance(sub, ast.Compare) and _none_test(sub):
                continue  # `out == None`: whether an argument was given, written the loose way
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
                if sub.func.attr in ("item", "tolist", "any", "all", "equal", "allclose") and self.is_tensor(
                    sub.func.value
                ):
                    self.add("value_special_case", test, "branches on tensor values: " + snippet(test))
                    return
            if isinstance(sub, ast.Compare) and any(self.is_tensor(s) for s in [sub.left, *sub.comparators]):
                self.add("value_special_case", test, "branches on tensor values: " + snippet(test))
                return

    def try_rule(self, node: ast.Try) -> None:
        reraises = all(all(isinstance(stmt, ast.Raise) for stmt in handler.body) for handler in node.handlers)
        if node.handlers and not reraises:
            self.add("try_except_fallback", node, "try/except in the forward path: " + snippet(node)[:80])

    def state_write(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None or not self.is_tensor(node.value):
            return
        for t in targets:
            inner = t
            while isinstance(inner, ast.Subscript):
                inner = inner.value
            stores_on_self = self_attr(inner) is not None
            stores_global = isinstance(inner, ast.Name) and inner is not t and inner.id not in self.tensors
            if stores_on_self or stores_global:
                self.add("caches_output", node, "forward keeps a tensor across calls: " + snippet(node))


def _none_test(node: ast.Compare) -> bool:
    """`x == None` / `x != None`: a presence test that reads no tensor value."""
    sides = [node.left, *node.comparators]
    is_none = [isinstance(side, ast.Constant) and side.value is None for side in sides]
    return len(sides) == 2 and any(is_none) and all(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops)
