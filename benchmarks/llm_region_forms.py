"""How often each form of the region question gets a real model to write a passing fix, on the true bug lines.

Localisation is taken out of the measure: for every case of a subset of a corpus whose cases hold `fixed.py`,
the lines `candidate.py` changes on the way to `fixed.py` are the region (an added line is asked about through
the line before it). Each region is asked in each form, at each temperature, as the LLM strategy asks it
(`fill_in`: the lines left out for the model to write, the reference as another file of the repository;
`lines`: the chat question showing the lines; `reasoned`: the chat question asking for the mistake first);
each answer is read as the strategy reads it and judged by `kmedic check` on the full tier. A case with two
regions cannot pass by one answer: `matching` counts answers that write the fixed lines (whitespace aside).

    python benchmarks/llm_region_forms.py --base-url http://127.0.0.1:8765/v1 --model qwen2.5-coder-1.5b \\
        --forms fill_in,lines --out out/region_forms.json
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kernel_medic.tools.repair.answers import read_region
from kernel_medic.tools.repair.llm import LLMClient, LLMError, LLMSettings
from kernel_medic.tools.repair.llm_patch import FILL_IN_SLACK_TOKENS, REGION_REPLY_TOKENS, reply_cap
from kernel_medic.tools.repair.llm_prompt import (
    Anchor,
    fill_in_prompt,
    fill_in_reply,
    region_messages,
)

FORMS = ("fill_in", "lines", "reasoned")


def regions(candidate: str, fixed: str) -> list[tuple[Anchor, str]]:
    """The changed spans of `candidate` (1-based, inclusive), each with the candidate fixed there alone."""
    a, b = candidate.splitlines(), fixed.splitlines()
    found = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:  # an added line: asked about through the line before it, which the fix keeps
            i1, j1 = max(0, i1 - 1), max(0, j1 - 1)
            i2 = i1 + 1
        expected = "".join(line + "\n" for line in a[:i1] + b[j1:j2] + a[i2:])
        found.append((Anchor(i1 + 1, i2, ""), expected))
    return found


def ask(
    client: LLMClient, form: str, name: str, reference: str, source: str, anchor: Anchor, temp: float
) -> tuple[str | None, int, int]:
    """(the source the answer proposes or None, input tokens, output tokens), under the strategy's caps."""
    if form == "fill_in":
        family = client.fill_in_family()
        if family is None:
            raise SystemExit("llm_region_forms: the model has no fill-in template (see --fill-in)")
        prompt = fill_in_prompt(family, source, anchor, reference)
        cap = reply_cap(source, anchor, FILL_IN_SLACK_TOKENS)
        reply = client.fill_in(prompt, temperature=temp, max_tokens=cap)
        text = fill_in_reply(reply.text, anchor)
    else:
        messages = region_messages(name, source, anchor, reference, reasoned=form == "reasoned")
        cap = reply_cap(source, anchor, REGION_REPLY_TOKENS)
        reply = client.complete(messages, temperature=temp, max_tokens=cap)
        text = reply.text
    answer = read_region(text, source, anchor.first, anchor.last)
    return answer.source, reply.input_tokens, reply.output_tokens


def passes(kmedic: str, case: Path, source: str, cache: dict[str, bool]) -> bool:
    key = hashlib.sha256(source.encode()).hexdigest()
    if key not in cache:
        with tempfile.TemporaryDirectory(prefix="kmedic-forms-") as tmp:
            candidate = Path(tmp) / "candidate.py"
            candidate.write_text(source)
            cmd = [kmedic, "check", str(case / "reference.py"), str(candidate), "--json", "--workers", "1"]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        try:
            cache[key] = json.loads(proc.stdout).get("verdict") == "pass"
        except ValueError:
            cache[key] = False
    return cache[key]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True, help="an OpenAI-compatible server")
    ap.add_argument("--model", required=True, help="the model's name (fill-in templates are chosen by it)")
    ap.add_argument("--fill-in", default="auto", help="fill-in family, auto or off (llm_fill_in)")
    ap.add_argument("--corpus", type=Path, default=Path("benchmarks/near_miss"))
    ap.add_argument("--every", type=int, default=3, help="every N-th case in sorted order")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--forms", default="fill_in,lines", help=f"comma-separated, of {', '.join(FORMS)}")
    ap.add_argument("--temperatures", default="0,0.6,0.9")
    ap.add_argument("--out", type=Path, required=True, help="JSON rows, one per case and form")
    ap.add_argument("--kmedic", default=str(Path(sys.executable).parent / "kmedic"))
    args = ap.parse_args(argv)
    forms = [f for f in args.forms.split(",") if f]
    if not forms or set(forms) - set(FORMS):
        ap.error(f"--forms: choose among {', '.join(FORMS)}")
    try:
        temps = [float(t) for t in args.temperatures.split(",")]
        client = LLMClient(
            LLMSettings(model=args.model, base_url=args.base_url, fill_in=args.fill_in, timeout_s=900)
        )
    except (ValueError, LLMError) as exc:
        ap.error(str(exc))
    names = sorted(p.name for p in args.corpus.iterdir() if (p / "fixed.py").is_file())[:: args.every]
    rows: list[dict[str, object]] = []
    cache: dict[str, bool] = {}
    for i, name in enumerate(names[: args.limit], 1):
        case = args.corpus / name
        candidate, fixed, reference = (
            (case / f).read_text() for f in ("candidate.py", "fixed.py", "reference.py")
        )
        neutral = f"{name.split('_')[0]}_case{i:02d}"  # the case's name says its bug; a user's would not
        for form in forms:
            row = {"case": name, "form": form, "regions": 0, "answers": 0, "passing": 0, "matching": 0,
                   "unchanged": 0, "input_tokens": 0, "output_tokens": 0}
            start = time.monotonic()
            for anchor, expected in regions(candidate, fixed):
                row["regions"] += 1
                for temp in temps:
                    asked = (client, form, neutral, reference, candidate, anchor, temp)
                    source, tokens_in, tokens_out = ask(*asked)
                    row["answers"] += 1
                    row["input_tokens"] += tokens_in
                    row["output_tokens"] += tokens_out
                    if source is None or source == candidate:  # the lines given back, or nothing read
                        row["unchanged"] += 1
                        continue
                    row["matching"] += "".join(source.split()) == "".join(expected.split())
                    row["passing"] += passes(args.kmedic, case, source, cache)
            row["wall_s"] = round(time.monotonic() - start, 1)
            rows.append(row)
            print(f"[region_forms] {i:2d} {name} {form}: {row['passing']}/{row['answers']} pass",
                  file=sys.stderr, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1))
    for form in forms:
        mine = [r for r in rows if r["form"] == form]
        total = sum(int(r["answers"]) for r in mine)
        print(
            f"{form}: cases with a passing answer {sum(int(r['passing']) > 0 for r in mine)}/{len(mine)}, "
            f"answers passing {sum(int(r['passing']) for r in mine)}/{total}, "
            f"writing the fixed lines {sum(int(r['matching']) for r in mine)}/{total}, "
            f"unchanged {sum(int(r['unchanged']) for r in mine)}/{total}"
        )
    both = {r["case"] for r in rows if int(r["passing"]) > 0}
    print(f"any form: {len(both)}/{len(names[: args.limit])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
