"""The README is the front door: its commands and its picture of the graph must match the code."""

from __future__ import annotations

from pathlib import Path

from kernel_medic.graph.builder import build_graph

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_readme_mermaid_is_the_graph_drawn_from_code() -> None:
    drawn = build_graph().get_graph().draw_mermaid().rstrip()
    assert f"```mermaid\n{drawn}\n```" in README


def test_readme_gives_the_two_front_door_commands_that_ci_runs() -> None:
    assert "make demo" in README and "make test" in README
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert "make test" in ci
