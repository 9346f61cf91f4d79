"""The LLM patch strategy: ask for an edit, read whatever form the model answered in, screen, propose one.

Each round asks for `samples` answers (parallel requests; the first at the base temperature, the others and
every retry hotter, so a retry never asks the same question the same way). Every answer is read by
`answers.read_answer` and completed by `answer_completion` (a misspelt name read as the in-scope one it stands
for; an edited line's unedited twins edited alike, as a second candidate); the applicable, new edits are
screened on the light tier when there are several and the most promising is proposed (the verify node judges
it on the full tier). A round in which no answer yields an applicable edit is a no-progress step: its reasons
are fed back in words the model can act on (or, where candidate lines look like a retrieved pattern's bug or
the evidence points at them, the next round asks about those few lines alone and reads the reply as their
rewrite; with `region_first` the first round already does; a model trained to fill in the middle is first
asked to write those lines without being shown them), and after `no_edit_left` such rounds the patcher stops.
Calls never exceed `calls_left`; each answer, its tokens (an estimate for timed-out requests, flagged)
and its wall time are recorded for the run's result.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kernel_medic.tools.repair.answer_completion import parallel_edit, resolve_names
from kernel_medic.tools.repair.answer_parts import answer_parts
from kernel_medic.tools.repair.answers import Answer, describe_edit, read_answer, read_region
from kernel_medic.tools.repair.llm import LLMError, LLMReply
from kernel_medic.tools.repair.llm_prompt import (
    Anchor,
    anchors,
    estimate_tokens,
    evidence_anchors,
    fill_in_prompt,
    fill_in_reply,
    patch_messages,
    pattern_fixes,
    region_messages,
    with_twins,
)
from kernel_medic.tools.repair.patchers import ChatModel, PatchOutcome, PatchRequest, Proposal
from kernel_medic.tools.repair.rules.base import Rewrite
from kernel_medic.tools.repair.search import EvaluateFn, screen, verify_full
from kernel_medic.tools.trace import source_hash

DEFAULT_CONTEXT = 8192
"""Context assumed when neither the config nor the server says (a small local model's usual window)."""

EventSink = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class LLMOptions:
    rounds: int = 3  # edit_retries + 1
    samples: int = 1
    temperature: float = 0.0
    retry_temperature: float = 0.7
    prompt_tokens: int | None = None  # None: context window (server's, else DEFAULT_CONTEXT) minus reply cap
    reply_tokens: int = 1536
    max_fraction: float = 0.6  # a fenced rewrite touching more of the source is refused as regeneration
    min_pattern_score: float = 0.25
    region_first: bool = False  # the first question is about the most suspect lines, not the whole file
    parallel_samples: bool = False  # else one by one, the round ending when an answer repeats an earlier one
    regions: int = 6  # suspect statements the region questions go through before one is asked again


class FillIn(NamedTuple):
    """A fill-in-the-middle question about one region."""

    family: str  # the template family (fill_in.FILL_IN_TEMPLATES)
    prompt: str
    anchor: Anchor
    cap: int  # reply tokens


@dataclass(frozen=True)
class LLMBudget:
    calls_left: int
    no_edit_left: int  # rounds without an applicable edit still allowed before the run stops
    wall_left_s: float
    no_edit_used: int = 0  # such rounds already spent in a row: region questions go on from there


@dataclass
class LLMOutcome(PatchOutcome):
    no_edit: int = 0  # rounds whose answers gave no applicable edit
    answers: list[dict[str, Any]] = field(default_factory=list)
    llm_wall_s: float = 0.0
    trimmed: list[str] = field(default_factory=list)  # prompt sections cut to fit the budget


class LLMPatcher:
    """Proposes one LLM-written edit of `request.source`, or says why there is none."""

    def __init__(
        self,
        model: ChatModel,
        options: LLMOptions,
        budget: LLMBudget,
        on_event: EventSink | None = None,
        evaluate: EvaluateFn | None = None,
        workers: int = 1,
        namespace: str = "",
        localise: Callable[[str, dict[str, Any]], list[int]] | None = None,
    ) -> None:
        self.model = model
        self.options = options
        self.budget = budget
        self.on_event = on_event or (lambda _kind, _data: None)
        self.evaluate = evaluate
        self.workers = workers
        self.namespace = namespace
        self.localise = localise  # (source, report) -> suspect statement lines, most suspect first

    def prompt_budget(self) -> int:
        if self.options.prompt_tokens:
            return self.options.prompt_tokens
        window = getattr(self.model, "context_window", lambda: None)() or DEFAULT_CONTEXT
        return max(512, window - self.options.reply_tokens)

    def propose(self, request: PatchRequest) -> LLMOutcome:
        open_hypotheses = [
            h["bug_class"]
            for h in request.hypotheses
            if request.patch_counts.get(h["bug_class"], 0) < request.patch_cap
        ]
        if request.hypotheses and not open_hypotheses:
            return LLMOutcome(None, exhausted=True, error="every hypothesis reached its patch cap")
        hypothesis = open_hypotheses[0] if open_hypotheses else "unknown"
        if request.patch_counts.get(hypothesis, 0) >= request.patch_cap:
            return LLMOutcome(None, exhausted=True, error="every hypothesis reached its patch cap")
        budget_tokens = self.prompt_budget()
        messages, trimmed = patch_messages(
            request, request.feedback, budget_tokens, self.options.min_pattern_score
        )
        # Echo detection looks at the instructions (format, example) only: the user prompt's hints may hold
        # the very fix, and a model quoting them is answering, not echoing.
        instructions = messages[0]["content"]
        outcome = LLMOutcome(None, trimmed=trimmed)
        # Lines that look like a known bug: after a round without an applicable edit, the next question is
        # about one of them alone (a small model that skims the whole file reads a few lines well).
        anchored = anchors(request.source, request.patterns, tried=request.seen_hashes)
        regions = self._regions(request, anchored, evidence=self.options.region_first)
        focus: Anchor | None = None
        reasoned: list[dict[str, str]] | None = None  # the region question asked the other way
        # The region asked about after n rounds without an edit is regions[n + shift]: the first round asks
        # about the whole file unless regions go first. Regions this run already asked about are last in
        # `regions`, so the calls left go to statements not asked about yet.
        shift = -1
        asked_regions = set(request.asked_regions)
        if self.options.region_first and regions:
            shift += 1
            focus = regions[shift % len(regions)]
            messages, reasoned = self._region_questions(request, focus)
        start = time.monotonic()
        calls_left = self.budget.calls_left
        for round_no in range(self.options.rounds):
            if calls_left <= 0:
                outcome.error = outcome.error or "max_llm_calls reached before an applicable edit"
                break
            if time.monotonic() - start >= self.budget.wall_left_s:
                outcome.error = outcome.error or "wall budget spent before an applicable edit"
                break
            k = min(self.options.samples, calls_left)
            # A region's first asking is a new question: at the base temperature, like the first round.
            first_ask = focus is not None and (focus.first, focus.last) not in asked_regions
            if focus is not None:
                asked_regions.add((focus.first, focus.last))
            fill_in = self._fill_in(request, focus)
            # A question this run already asked (in this patch step or an earlier one) is asked hotter. On a
            # region's first asking each of its forms (filled in, its lines, the mistake named first) is asked
            # at the base temperature once: a different question draws a different answer where a hotter
            # one gives the same back (round 28), and each form's likeliest answer is its best.
            kinds = ["fill_in"] * (fill_in is not None) + ["lines"] + ["reasoned"] * (reasoned is not None)
            asked = round_no + self.budget.no_edit_used
            temps = [
                self.options.temperature if first_ask and i < len(kinds) else self._temperature(asked, i)
                for i in range(k)
            ]
            # A region asked again starts further on in its forms, so one sample per round goes through all.
            turn = 0 if first_ask else asked
            questions = [kinds[(turn + i) % len(kinds)] for i in range(k)]
            cap = reply_cap(request.source, focus, REGION_REPLY_TOKENS)
            replies, round_wall = self._ask(messages, temps, questions, reasoned, cap, fill_in)
            temps = temps[: len(replies)]
            # Parallel samples overlap: the round costs its elapsed time, not the sum of the answers' times.
            outcome.llm_wall_s += round_wall
            calls_left -= len(replies)
            fresh: dict[str, tuple[str, str, dict[str, Any]]] = {}
            repeats = 0
            for i, (temp, reply) in enumerate(zip(temps, replies, strict=True)):
                record: dict[str, Any] = {"round": round_no + 1, "sample": i + 1, "temperature": temp}
                if focus is not None:
                    record.update(region=[focus.first, focus.last], of=source_hash(request.source))
                    record["question"] = questions[i]
                outcome.llm_calls += 1
                if isinstance(reply, LLMError):
                    outcome.input_tokens += reply.lost_input_tokens
                    record.update(
                        form="error",
                        applied=False,
                        refusal=str(reply),
                        input_tokens=reply.lost_input_tokens,
                        output_tokens=0,
                        tokens_estimated=reply.lost_input_tokens > 0,
                        wall_s=round(reply.wall_s, 3),
                    )
                    outcome.answers.append(record)
                    outcome.error = f"llm_error: {reply}"
                    continue
                outcome.input_tokens += reply.input_tokens + reply.lost_input_tokens
                outcome.output_tokens += reply.output_tokens
                answer = (
                    read_answer(reply.text, request.source, instructions, self.options.max_fraction)
                    if focus is None
                    else read_region(
                        reply.text, request.source, focus.first, focus.last, self.options.max_fraction
                    )
                )
                record.update(
                    form=answer.form,
                    input_tokens=reply.input_tokens + reply.lost_input_tokens,
                    output_tokens=reply.output_tokens,
                    tokens_estimated=reply.lost_input_tokens > 0,
                    wall_s=round(reply.wall_s, 3),
                    notes=answer.notes,
                )
                versions = self._completed(request.source, answer)
                record["notes"] = answer.notes
                new = [(src, why) for src, why in versions if source_hash(src) not in request.seen_hashes]
                if answer.source is not None and not new:
                    repeats += 1
                    record.update(applied=False, refusal="the edit reproduces a version already tried")
                elif answer.source is not None:
                    description = describe_edit(request.source, new[0][0], answer.form)
                    record.update(applied=True, description=description, refusal="")
                    for src, why in new:
                        fresh.setdefault(source_hash(src), (src, why, record))
                else:
                    record.update(applied=False, refusal=answer.refusal)
                outcome.answers.append(record)
            if fresh:
                source, why, record = self._best(request.source, list(fresh.values()))
                record["chosen"] = True
                description = describe_edit(request.source, source, record["form"]) + why
                record["description"] = description
                outcome.proposal = Proposal(source, "llm", hypothesis, "llm", description)
                outcome.feedback = ""
                outcome.error = None
                break
            if (
                outcome.error
                and outcome.error.startswith("llm_error")
                and all(isinstance(r, LLMError) for r in replies)
            ):
                break  # the endpoint is failing: the guard ends the run on llm_error
            # A region's answer that repeats a tried edit says that region is spent: the next one is asked.
            # Anywhere else (or with every region asked), a repeat is an oscillation.
            last_region = focus is None or outcome.no_edit + shift + 1 >= len(regions)
            if repeats and repeats == len(replies) and last_region:
                outcome.oscillation = True
                outcome.feedback = "That edit reproduces a version already tried."
                break
            outcome.no_edit += 1
            refusals = [a["refusal"] for a in outcome.answers[-len(replies) :] if a.get("refusal")]
            outcome.feedback = "Your previous answer could not be applied: " + "; ".join(
                dict.fromkeys(refusals)
            )
            outcome.error = f"no applicable edit: {refusals[0] if refusals else 'empty answer'}"
            if outcome.no_edit >= self.budget.no_edit_left:
                break
            if not regions and outcome.no_edit == 1:
                # No known bug anchors a line: ask about the statements the evidence points at instead.
                regions = self._regions(request, [], evidence=True)
            if regions:
                focus = regions[(outcome.no_edit + shift) % len(regions)]
                messages, reasoned = self._region_questions(request, focus)
                continue
            last = next((r for r in replies if isinstance(r, LLMReply)), None)
            messages = self._retry_messages(
                messages,
                last.text if last else "",
                outcome.feedback + self._direction(request),
                budget_tokens,
            )
        return outcome

    def _regions(self, request: PatchRequest, anchored: list[Anchor], evidence: bool) -> list[Anchor]:
        """The lines to ask about alone: those that look like a known bug, then (with `evidence`) the
        statements the evidence points at."""
        found = list(anchored)
        if evidence:
            failing = [c for c in request.report.get("cases") or [] if c.get("verdict") not in (None, "pass")]
            ranked: list[int] = []
            try:
                if failing and self.localise:  # without a failing case the ranking is only source order
                    ranked = self.localise(request.source, request.report)
            except Exception:  # localisation only points the question: without it, the hypotheses' lines
                ranked = []
            spans = {(a.first, a.last) for a in found}
            found += [
                a
                for a in evidence_anchors(
                request.source, request.hypotheses, request.report, ranked, limit=self.options.regions
            )
                if (a.first, a.last) not in spans
            ]
        # Parallel lines are asked about together (each statement's twins next to it join its region).
        widened: dict[tuple[int, int], Anchor] = {}
        for a in found:
            a = with_twins(request.source, a)
            widened.setdefault((a.first, a.last), a)
        found = list(widened.values())
        # A region an earlier LLM edit already rewrote without success goes last: asked again, the model
        # tends to repeat that edit.
        edited = {
            " ".join(line[1:].split())
            for a in request.failed_attempts
            if a.get("strategy") == "llm"
            for line in str(a.get("diff") or "").splitlines()
            if line.startswith("-") and not line.startswith("---") and line[1:].strip()
        }
        lines = request.source.splitlines()

        def rewritten(a: Anchor) -> bool:
            return any(" ".join(x.split()) in edited for x in lines[a.first - 1 : a.last])

        def asked(a: Anchor) -> bool:
            return (a.first, a.last) in request.asked_regions

        fresh = [a for a in found if not rewritten(a)]
        return (
            [a for a in fresh if not asked(a)]
            + [a for a in fresh if asked(a)]
            + [a for a in found if rewritten(a)]
        )

    def _direction(self, request: PatchRequest) -> str:
        """For a retry: the most likely bug and its usual fix in one sentence (a model that gave the code back
        unchanged needs to be told where to look, not only that it failed)."""
        top = next((h for h in request.hypotheses if h.get("evidence")), None)
        if top is None:
            return ""
        fix = pattern_fixes(request.patterns, self.options.min_pattern_score).get(top["bug_class"])
        where = f" (around lines {top['lines'][0]}-{top['lines'][-1]})" if top.get("lines") else ""
        text = f"\nThe evidence points to {top['bug_class'].replace('_', ' ')}{where}."
        return text + (f" The usual fix: {fix}" if fix else "")

    def _temperature(self, round_no: int, sample: int) -> float:
        if round_no == 0 and sample == 0:
            return self.options.temperature
        # Hotter with each retry and each extra sample, so answers differ; capped where code stays coherent.
        return round(min(1.0, self.options.retry_temperature + 0.1 * (round_no + sample - 1)), 2)

    def _fill_in(self, request: PatchRequest, focus: Anchor | None) -> FillIn | None:
        """The fill-in question about `focus`, when the model takes one."""
        family = getattr(self.model, "fill_in_family", lambda: None)()
        if focus is None or family is None:
            return None
        prompt = fill_in_prompt(family, request.source, focus, request.reference_source)
        # Only the region's own number of lines is kept: twice its tokens leaves room for a longer line.
        return FillIn(family, prompt, focus, reply_cap(request.source, focus, FILL_IN_SLACK_TOKENS) or 0)

    @staticmethod
    def _region_questions(
        request: PatchRequest, focus: Anchor
    ) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
        """The question about `focus`, asked for the lines alone and with the mistake named first."""
        ask = (request.problem_name, request.source, focus, request.reference_source)
        return region_messages(*ask), region_messages(*ask, reasoned=True)

    def _ask(
        self,
        messages: list[dict[str, str]],
        temps: list[float],
        questions: list[str],
        reasoned: list[dict[str, str]] | None = None,
        max_tokens: int | None = None,
        fill_in: FillIn | None = None,
    ) -> tuple[list[LLMReply | LLMError], float]:
        """The answers, and the round's LLM wall: the requests' summed times one after the other, the
        longest when they run in parallel (its time includes the others' queueing at a one-slot server).
        One after the other, the round ends at the first answer whose code repeats an earlier one's: a
        small model that says the same thing at two temperatures says it at a third (a real 1.5B model's
        third sample held no fix in any of 46 such rounds), and the calls left ask other questions.
        `questions[i]` is the form answer i is asked in: `lines` (`messages`), `reasoned` (the mistake named
        first: a different question draws a different answer where a hotter one gives the same back), or
        `fill_in` (a model that fills in the middle writes the region's lines without seeing them; read as
        a region answer)."""

        def one(temp: float, i: int) -> LLMReply | LLMError:
            form = questions[i]
            try:
                if form == "fill_in" and fill_in is not None:
                    event = {"prompt": fill_in.prompt, "fill_in": fill_in.family, "temperature": temp}
                    self.on_event("llm_request", event)
                    reply = self.model.fill_in(fill_in.prompt, temperature=temp, max_tokens=fill_in.cap)
                else:
                    asked = reasoned if form == "reasoned" and reasoned is not None else messages
                    self.on_event("llm_request", {"messages": asked, "temperature": temp})
                    reply = self.model.complete(asked, temperature=temp, max_tokens=max_tokens)
            except LLMError as exc:
                self.on_event("llm_failure", {"error": str(exc), "lost_input_tokens": exc.lost_input_tokens})
                return exc
            self.on_event(
                "llm_response",
                {
                    "text": reply.text,
                    "input_tokens": reply.input_tokens,
                    "output_tokens": reply.output_tokens,
                    "lost_input_tokens": reply.lost_input_tokens,
                    "attempts": reply.attempts,
                    "wall_s": round(reply.wall_s, 3),
                    "model": reply.model,
                },
            )
            if form == "fill_in" and fill_in is not None:
                return dataclasses.replace(reply, text=fill_in_reply(reply.text, fill_in.anchor))
            return reply

        sequential = not self.options.parallel_samples or hasattr(self.model, "responses")  # a replay
        if len(temps) == 1 or sequential:  # serves its recordings in order
            replies: list[LLMReply | LLMError] = []
            said: set[str] = set()
            for i, temp in enumerate(temps):
                reply = one(temp, i)
                replies.append(reply)
                gist = _gist(reply.text) if isinstance(reply, LLMReply) else ""
                if gist in said and not self.options.parallel_samples:
                    break
                if gist:
                    said.add(gist)
            return replies, sum(r.wall_s for r in replies)
        with ThreadPoolExecutor(max_workers=len(temps)) as pool:
            replies = list(pool.map(one, temps, range(len(temps))))
        return replies, max(r.wall_s for r in replies)

    @staticmethod
    def _completed(base: str, answer: Answer) -> list[tuple[str, str]]:
        """The sources an answer proposes, each with what was added to it: the answer with any misspelt
        name read as the in-scope one it stands for, then (when an edited line has unedited twins) the
        same with the twins edited alike; each part of the answer alone (answer_parts.py); then the same,
        but for the parts, for each other reading of the reply."""
        if answer.source is None:
            return []
        versions: list[tuple[str, str]] = []
        for i, read in enumerate([answer.source, *answer.alternatives]):
            source, renamed = resolve_names(base, read)
            if i == 0:
                answer.notes = [*answer.notes, *renamed]
            versions.append((source, "" if i == 0 else " (read from another part of the reply)"))
            twins = parallel_edit(base, source)
            if twins is not None:
                alike = f" (and {twins[1]} parallel line{'s' if twins[1] > 1 else ''} alike)"
                versions.append((twins[0], versions[-1][1] + alike))
            if i == 0:
                versions += answer_parts(base, source)
        unique: dict[str, str] = {}
        for src, why in versions:
            unique.setdefault(src, why)
        return list(unique.items())

    def _best(
        self, base: str, found: list[tuple[str, str, dict[str, Any]]]
    ) -> tuple[str, str, dict[str, Any]]:
        """The most promising edit on the light tier (a pass, then the highest light score, then smallest)."""
        if len(found) == 1 or self.evaluate is None:
            return found[0]
        rewrites = [Rewrite("llm", rec["description"] + why, src, 0) for src, why, rec in found]
        ranked = screen(base, rewrites, self.evaluate, self.workers, self.namespace)
        by_source = {src: (src, why, rec) for src, why, rec in found}
        for s in ranked:
            _, why, rec = by_source[s.rewrite.source]
            key = "light" if not why else "light_part" if "part of the answer" in why else "light_parallel"
            light = round(s.light, 4)
            rec[key] = max(rec[key], light) if key in rec else light  # the best of an answer's parts
        passed = [s.rewrite for s in ranked if s.verdict == "pass"]
        if len(passed) > 1:
            # The light case cannot tell its passes apart (`H + pad` and `H + 2 * pad` size an output
            # alike at some sizes): the judge's tier picks among them, or the first one proposed may be the
            # wrong one and the right one never verified.
            for rewrite, verdict, _score in verify_full(passed, self.evaluate, self.workers, self.namespace):
                if verdict == "pass":
                    return by_source[rewrite.source]
        return by_source[ranked[0].rewrite.source]

    @staticmethod
    def _retry_messages(
        messages: list[dict[str, str]], answer: str, feedback: str, budget_tokens: int
    ) -> list[dict[str, str]]:
        """The first prompt, the last answer and the feedback; older exchanges are dropped (budget)."""
        base = messages[:2]
        ask = (
            f"{feedback}\nAnswer again with SEARCH/REPLACE blocks whose SEARCH text is copied exactly from "
            "the current candidate above (not from the instructions or the example)."
        )
        kept = answer
        while kept and estimate_tokens("".join(m["content"] for m in base) + kept + ask) > budget_tokens:
            kept = kept[: len(kept) // 2]  # a long answer (a whole file) is cut before the prompt is
        return (
            base
            + ([{"role": "assistant", "content": kept}] if kept else [])
            + [{"role": "user", "content": ask}]
        )


def reply_cap(source: str, focus: Anchor | None, extra: int = 0) -> int | None:
    """The reply cap of a question about `focus`: its lines twice over and `extra` tokens (None: the file's
    cap). A small model asked for a sentence first went on for paragraphs (round 28: output tokens doubled);
    a reply cut inside its fence is still read."""
    if focus is None:
        return None
    region = "\n".join(source.splitlines()[focus.first - 1 : focus.last])
    return 2 * estimate_tokens(region) + extra


FILL_IN_SLACK_TOKENS = 40
"""Reply tokens a fill-in answer gets beyond twice its region's: a line written longer than it was."""

REGION_REPLY_TOKENS = 200
"""Tokens a region answer gets beyond twice its lines: one sentence naming the mistake and the fences."""


def _gist(text: str) -> str:
    """An answer's code without comments or layout (its last fence, else the whole reply): two answers with
    the same gist propose the same edit."""
    fences = re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
    code = fences[-1] if fences else text
    return " ".join(re.sub(r"#[^\n]*", "", code).split())
