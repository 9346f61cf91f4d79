"""kernel-medic: repair near-miss accelerator kernels instead of regenerating them."""

import ast
import sys
import threading

__version__ = "0.1.0"

if sys.version_info < (3, 13) and not getattr(ast.parse, "_kmedic_serialised", False):
    # CPython before 3.13 keeps the AST builder's recursion depth in shared state, so two threads building
    # ASTs at once can fail with "SystemError: AST constructor recursion depth mismatch" (gh-106905).
    # kmedic parses sources from several threads (parallel screening, bench and batch workers): parsing is
    # serialised, which changes nothing else (a parse holds the GIL for most of its time anyway).
    _parse, _lock = ast.parse, threading.RLock()

    def _serialised_parse(*args, **kwargs):  # type: ignore[no-untyped-def]
        with _lock:
            return _parse(*args, **kwargs)

    _serialised_parse._kmedic_serialised = True  # type: ignore[attr-defined]
    _serialised_parse.__doc__ = _parse.__doc__
    ast.parse = _serialised_parse
