"""One node of a parsed module replaced in its text, without re-rendering the whole module.

The edit space offers hundreds of edits per source; `deep_replace` walks the whole tree and `.code` renders
all of it for each one, which made edit generation cost more than screening the edits. A splice renders only
the new node, with the indentation its place has, and pastes it over the old node's characters: the same
text the whole-module route produces, because libcst renders a module as the concatenation of its nodes.
"""

from __future__ import annotations

import inspect
from functools import cache
from itertools import accumulate

import libcst as cst
from libcst._nodes.internal import CodegenState


class _Recorder(CodegenState):
    """A rendering that notes where each node's tokens start and end, and the indentation around it."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.spans: dict[int, tuple[int, int, tuple[str, ...]]] = {}
        self._open: dict[int, tuple[int, tuple[str, ...]]] = {}

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._open[id(node)] = (len(self.tokens), tuple(self.indent_tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start, indents = self._open.pop(id(node))
        self.spans[id(node)] = (start, len(self.tokens), indents)


class Splicer:
    """Character spans of every node of `module` (rendered once), for text replacement of single nodes."""

    def __init__(self, module: cst.Module) -> None:
        recorder = _Recorder(module)
        module._codegen(recorder)
        self._module = module
        self._text = "".join(recorder.tokens)
        self._offsets = [0, *accumulate(len(t) for t in recorder.tokens)]
        self._spans = recorder.spans

    def replace(self, old: cst.CSTNode, new: cst.CSTNode) -> str | None:
        """The module's code with `old` rendered as `new`; None where a splice cannot be exact.

        Not exact: a node its parent renders with arguments (an argument's default comma, an `elif`), a
        node not in this module, and the end of a file without its trailing newline.
        """
        span = self._spans.get(id(old))
        if span is None or not (_standalone(type(old)) and _standalone(type(new))):
            return None
        first, last, indents = span
        if last >= len(self._offsets):
            return None  # the file's last newline, popped after the node was rendered
        start, end = self._offsets[first], self._offsets[last]
        if _render(self._module, old, indents) != self._text[start:end]:
            return None  # the old node does not render alone as it does in place: leave it to deep_replace
        return self._text[:start] + _render(self._module, new, indents) + self._text[end:]


def _render(module: cst.Module, node: cst.CSTNode, indents: tuple[str, ...]) -> str:
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens = list(indents)
    node._codegen(state)
    return "".join(state.tokens)


@cache
def _standalone(kind: type) -> bool:
    """Whether `kind` renders the same whatever its parent passes (no default comma, semicolon, elif)."""
    return len(inspect.signature(kind._codegen_impl).parameters) == 2
