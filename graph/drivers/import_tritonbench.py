"""Import TritonBench-style generations (JSONL, the code in a field per record) as kernel-medic problems.

Input: a JSONL file, one generation per line (a JSON object), and a *reference folder* holding one problem
reference per operator, either ``REFS/<op>/reference.py`` (an optional ``REFS/<op>/problem.toml`` is copied
along) or ``REFS/<op>.py``. Output: one problem folder per imported record under ``OUT``, named
``<jsonl stem>_r<record index, 4 digits>_<op>``, holding

- ``reference.py``: the operator's reference, copied unchanged;
- ``candidate.py``: the record's code exactly as extracted (module-level test code included: a generation
  whose own example crashes at import is a crash of that generation), followed by our ``ModelNew`` wrapper;
- ``problem.toml`` when the reference folder has one; ``source.toml``: jsonl path, record index, op, field;
  ``meta.toml``: the same as its ``[source]`` table, so ``kmedic bench`` reads the folder as an imported case.

The mapping, step by step:

1. **Code** (``extract_code``): the record's ``code_field`` (default ``predict``). When it holds Markdown
   fences, the fenced blocks tagged ``python``/``py``/``triton`` (or untagged) are concatenated in order,
   other languages (``cpp``, ``bash``...) are dropped; without fences the whole text is the code.
2. **Operator** (``record_op``), first that names an operator of the reference folder: the record's
   ``op_field`` when given; the function named after ``Wrapper Entry Information:`` in the record's
   ``prompt`` (TritonBench's prompt format; ``torch.div`` → ``div``, the last dotted part); the first
   top-level ``def`` of the code that names an operator. A record none of these maps is skipped.
3. **Wrapper**: the reference's ``Model.forward`` must return a call of a module-level function of
   ``reference.py`` (the operator's entry point, e.g. ``return add(x0, x1, alpha=0.5)``). ``ModelNew`` gets
   that ``forward`` verbatim, so it calls the *candidate's* function of the same name with the same
   arguments: the generated entry point must keep the reference's name and signature, as the benchmark's
   prompt asks. ``get_inputs``/``get_init_inputs`` stay the reference's.

Records whose code holds no ``@triton.jit`` are skipped when ``require_kernel`` (they are not kernels).
Skipped records are listed with their reason in ``OUT/import.json``. Bad input (unreadable JSONL, a record
that is not an object or lacks the field, an empty reference folder, a reference without a usable
``Model.forward``) raises a one-line ``ValueError``. Nothing is imported or executed here: sources are
parsed with ``ast`` only.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+\-]*)[^\n]*\n(.*?)^[ \t]*```", re.M | re.S)
_CODE_LANGS = {"", "python", "py", "python3", "triton", "trion", "tritonpython"}
_ENTRY = re.compile(r"Wrapper Entry Information:\s*(?:def\s+)?([A-Za-z_][\w.]*)\s*\(")
_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(", re.M)
WRAPPER_MARK = (
    "# ---- kernel-medic: ModelNew wrapper (added by the importer, not part of the generation) ----"
)


@dataclass(frozen=True)
class Reference:
    op: str
    source: str  # reference.py text
    forward: str  # Model.forward's source, dedented to class-body level (4 spaces)
    function: str  # the module-level function forward calls
    problem_toml: str | None


def extract_code(text: str) -> str:
    """The Python code of a generation: its python/triton/untagged fenced blocks, or the whole text."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    if not blocks:
        return text.strip("\n") + "\n"
    code = [body.rstrip() for lang, body in blocks if lang in _CODE_LANGS]
    return "\n\n".join(code).strip("\n") + "\n" if code else ""


def record_op(record: dict[str, Any], code: str, ops: set[str], op_field: str | None = None) -> str | None:
    """The operator a record belongs to (see the module docstring, step 2), or None."""
    if op_field is not None and isinstance(record.get(op_field), str):
        name = record[op_field].split(".")[-1]
        if name in ops:
            return name
    prompt = record.get("prompt")
    if isinstance(prompt, str):
        match = _ENTRY.search(prompt)
        if match and match.group(1).split(".")[-1] in ops:
            return match.group(1).split(".")[-1]
    for name in _DEF.findall(code):
        if name in ops:
            return name
    return None


def load_reference(path: Path, op: str) -> Reference:
    """A reference of the reference folder; ValueError unless Model.forward calls a module function."""
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ValueError(f"{path}: reference does not parse: {exc.msg} (line {exc.lineno})") from None
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    forward = None
    if model is not None:
        forward = next(
            (n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None
        )
    if forward is None:
        raise ValueError(f"{path}: no class Model with a forward method")
    called = [
        n.func.id
        for n in ast.walk(forward)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in functions
    ]
    if not called:
        raise ValueError(f"{path}: Model.forward calls no module-level function of reference.py")
    segment = ast.get_source_segment(source, forward, padded=True) or ""
    lines = segment.splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    body = "\n".join("    " + line[indent:] if line.strip() else "" for line in lines)
    toml = path.parent / "problem.toml" if path.name == "reference.py" else None
    return Reference(
        op=op,
        source=source,
        forward=body,
        function=called[0],
        problem_toml=toml.read_text(encoding="utf-8") if toml is not None and toml.is_file() else None,
    )


def load_references(folder: Path) -> dict[str, Reference]:
    """Every operator of a reference folder, by name; ValueError when there is none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: reference folder not found")
    refs: dict[str, Reference] = {}
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and (entry / "reference.py").is_file():
            refs[entry.name] = load_reference(entry / "reference.py", entry.name)
        elif entry.is_file() and entry.suffix == ".py":
            refs[entry.stem] = load_reference(entry, entry.stem)
    if not refs:
        raise ValueError(f"{folder}: no <op>/reference.py or <op>.py references in it")
    return refs


def candidate_source(code: str, reference: Reference) -> str:
    """The generation's code followed by a ModelNew whose forward is the reference's Model.forward."""
    return (
        f"{code.rstrip()}\n\n\n{WRAPPER_MARK}\nimport torch  # noqa: E402\n\n\n"
        f"class ModelNew(torch.nn.Module):\n"
        f'    """Calls the generation\'s `{reference.function}` as the reference\'s Model does."""\n\n'
        f"{reference.forward}\n"
    )


def write_problem(folder: Path, code: str, reference: Reference, source: dict[str, Any]) -> Path:
    """One problem folder (reference.py, candidate.py, problem.toml if any, source.toml)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(reference.source, encoding="utf-8")
    (folder / "candidate.py").write_text(candidate_source(code, reference), encoding="utf-8")
    if reference.problem_toml is not None:
        (folder / "problem.toml").write_text(reference.problem_toml, encoding="utf-8")
    table = "".join(f"{k} = {json.dumps(v)}\n" for k, v in source.items())
    (folder / "source.toml").write_text(table, encoding="utf-8")
    # An imported corpus case too, so `kmedic bench` runs an imported JSONL like a corpus (no fixed.py).
    described = ", ".join(f"{k} {v}" for k, v in source.items() if k in ("op", "record"))
    (folder / "meta.toml").write_text(
        f'category = "other"\ndescription = {json.dumps("TritonBench-style generation: " + described)}\n'
        f"looked_at_for_rules = false\n\n[source]\n{table}",
        encoding="utf-8",
    )
    return folder


def read_jsonl(path: Path, code_field: str) -> list[dict[str, Any]]:
    """The records of a JSONL file; ValueError (one line, with the line number) on anything malformed."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: JSONL file not found")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{number}: a record must be a JSON object")
        if not isinstance(record.get(code_field), str):
            raise ValueError(f"{path}:{number}: no string field {code_field!r}")
        records.append(record)
    if not records:
        raise ValueError(f"{path}: no records")
    return records


def import_tritonbench(
    jsonl: Path,
    references: Path,
    out: Path,
    *,
    code_field: str = "predict",
    op_field: str | None = None,
    require_kernel: bool = True,
    dedupe: bool = True,
) -> list[Path]:
    """Write one problem folder per mappable record of `jsonl` under `out`; returns the folders written.

    `dedupe` skips a record whose extracted code equals an earlier record's for the same operator.
    """
    records = read_jsonl(Path(jsonl), code_field)
    refs = load_references(Path(references))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    skipped: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    stem = re.sub(r"[^\w.-]", "_", Path(jsonl).stem)
    for index, record in enumerate(records):
        code = extract_code(record[code_field])
        op = record_op(record, code, set(refs), op_field)
        reason = None
        if op is None:
            reason = "no operator of the reference folder matches"
        elif not code.strip():
            reason = "no Python code"
        elif require_kernel and "triton.jit" not in code:
            reason = "no @triton.jit kernel"
        elif dedupe and (op, code) in seen:
            reason = "same code as an earlier record"
        if reason is not None:
            skipped.append({"record": index, "op": op, "reason": reason})
            continue
        assert op is not None
        seen.add((op, code))
        folder = out / f"{stem}_r{index:04d}_{op}"
        if folder.exists():
            shutil.rmtree(folder)
        source = {"jsonl": str(jsonl), "record": index, "op": op, "code_field": code_field}
        written.append(write_problem(folder, code, refs[op], source))
    (out / "import.json").write_text(
        json.dumps({"jsonl": str(jsonl), "written": [p.name for p in written], "skipped": skipped}, indent=1)
    )
    return written
