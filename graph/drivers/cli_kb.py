"""`kmedic kb`: list, show, search, add, export, import and count the knowledge base's failure patterns."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kernel_medic.tools.evaluation.problem import InvalidProblem

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


def register(subparsers: Any) -> None:
    """Add `kb` and its actions to the `kmedic` subcommand parsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--kb", help="knowledge-base directory (default: KMEDIC_KB_PATH or <data dir>/kb)")
    common.add_argument("--json", action="store_true", help="print JSON on stdout")
    kb = subparsers.add_parser(
        "kb",
        help="inspect and edit the knowledge base of failure patterns",
        description="The failure patterns retrieval draws on: seeds shipped with kernel-medic plus patterns "
        "distilled from accepted repairs.",
    )
    actions = kb.add_subparsers(dest="kb_command", required=True)
    lst = actions.add_parser("list", parents=[common], help="list patterns (id, categories, bug class)")
    lst.add_argument("--category", help="only this operator category")
    lst.set_defaults(run=_list)
    show = actions.add_parser("show", parents=[common], help="print one pattern in full")
    show.add_argument("id")
    show.set_defaults(run=_show)
    search = actions.add_parser("search", parents=[common], help="patterns matching a description")
    search.add_argument("text")
    search.add_argument("--symptoms", default="", help="comma-separated symptom keywords (e.g. rows,x100)")
    search.add_argument("--category", help="operator category of the reference")
    search.add_argument("-k", type=int, default=5, help="how many (default 5)")
    search.set_defaults(run=_search)
    add = actions.add_parser("add", parents=[common], help="add patterns from a JSON or TOML file")
    add.add_argument("file")
    add.set_defaults(run=_add)
    exp = actions.add_parser("export", parents=[common], help="write every pattern to a JSON file")
    exp.add_argument("file")
    exp.set_defaults(run=_export)
    imp = actions.add_parser("import", parents=[common], help="add the patterns of an exported JSON file")
    imp.add_argument("file")
    imp.set_defaults(run=_import)
    stats = actions.add_parser("stats", parents=[common], help="pattern counts per category and bug class")
    stats.set_defaults(run=_stats)


def _open(args: argparse.Namespace) -> Any:
    from kernel_medic.vectordb.store import open_knowledge_base

    try:
        return open_knowledge_base(args.kb)
    except (OSError, ValueError) as exc:  # ValueError: the install lacks its seed files
        raise InvalidProblem(f"cannot open knowledge base {args.kb or ''}: {exc}") from exc


def _print(args: argparse.Namespace, data: Any, text: str) -> int:
    print(json.dumps(data, indent=2) if args.json else text)
    return 0


def _summary(p: Any) -> dict[str, Any]:
    return {
        "id": p.id,
        "title": p.title,
        "categories": p.categories,
        "bug_class": p.bug_class,
        "provenance": p.provenance,
        "times_retrieved": p.times_retrieved,
        "times_accepted": p.times_accepted,
    }


def _list(args: argparse.Namespace) -> int:
    from kernel_medic.vectordb.features import CATEGORIES

    if args.category and args.category not in CATEGORIES:
        raise InvalidProblem(f"unknown category {args.category!r} (known: {', '.join(CATEGORIES)})")
    pats = _open(args).list(args.category)
    lines = [f"{p.id:<40} {','.join(p.categories):<28} {p.bug_class:<24} {p.title}" for p in pats]
    return _print(args, [_summary(p) for p in pats], "\n".join(lines) or "(no patterns)")


def _show(args: argparse.Namespace) -> int:
    p = _open(args).get(args.id)
    if p is None:
        raise InvalidProblem(f"no pattern {args.id!r} in the knowledge base (see `kmedic kb list`)")
    d = p.to_dict()
    text = "\n".join(
        f"{k}:\n{v}" if isinstance(v, str) and "\n" in v else f"{k}: {v}" for k, v in d.items() if v != ""
    )
    return _print(args, d, text)


def _search(args: argparse.Namespace) -> int:
    from kernel_medic.vectordb.store import RetrievalQuery

    symptoms = [s.strip() for s in args.symptoms.split(",") if s.strip()]
    query = RetrievalQuery(text=args.text, symptoms=symptoms, category=args.category)
    hits = _open(args).search(query, k=args.k)
    data = [{**_summary(p), "score": score, "why": why} for p, score, why in hits]
    lines = [f"{score:.3f}  {p.id:<40} {p.title}\n       {why}" for p, score, why in hits]
    return _print(args, data, "\n".join(lines) or "(no patterns)")


def _read_patterns(path: str) -> list[Any]:
    from kernel_medic.vectordb.pattern import Pattern

    file = Path(path)
    try:
        raw = file.read_text()
        data: Any = tomllib.loads(raw) if file.suffix == ".toml" else json.loads(raw)
    except (OSError, ValueError) as exc:
        raise InvalidProblem(f"{path}: cannot read patterns: {exc}") from exc
    if isinstance(data, dict) and "patterns" in data:
        data = data["patterns"]
    items = data if isinstance(data, list) else [data]
    try:
        return [Pattern.from_dict(dict(d)) for d in items]
    except (TypeError, ValueError) as exc:
        raise InvalidProblem(f"{path}: {exc}") from exc


def _add(args: argparse.Namespace) -> int:
    kb = _open(args)
    pats = _read_patterns(args.file)
    for p in pats:
        kb.add(p)
    return _print(args, {"added": [p.id for p in pats]}, f"added {len(pats)} pattern(s)")


def _export(args: argparse.Namespace) -> int:
    n = _open(args).export(args.file)
    return _print(args, {"exported": n, "file": args.file}, f"exported {n} pattern(s) to {args.file}")


def _import(args: argparse.Namespace) -> int:
    kb = _open(args)
    pats = _read_patterns(args.file)
    for p in pats:
        kb.add(p)
    return _print(args, {"imported": len(pats)}, f"imported {len(pats)} pattern(s)")


def _stats(args: argparse.Namespace) -> int:
    s = _open(args).stats()
    lines = [f"patterns: {s['patterns']} ({s['distilled']} distilled)  at {s['path']}", "categories:"]
    lines += [f"  {c:<20} {n}" for c, n in s["categories"].items()]
    lines += ["bug classes:"] + [f"  {c:<24} {n}" for c, n in s["bug_classes"].items()]
    return _print(args, s, "\n".join(lines))
