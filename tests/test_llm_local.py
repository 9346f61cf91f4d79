"""The local-model benchmark: its subset runs under names that do not describe the bugs, and a server that
cannot answer is refused before any case runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmark_modules import load
from kernel_medic.tools.evaluation.corpus import load_case

ROOT = Path(__file__).resolve().parents[1]


def _llm_local():  # type: ignore[no-untyped-def]
    return load("llm_local")


def test_the_subset_runs_under_names_that_do_not_describe_the_bug(tmp_path: Path) -> None:
    llm_local = _llm_local()
    corpus = ROOT / "benchmarks" / "near_miss"
    cases = llm_local.subset(corpus, 3, 2)
    names = llm_local.neutral_copy(corpus, cases, tmp_path / "corpus")
    assert list(names.values()) == cases
    for name, case in names.items():
        slug = case.split("_", 2)[-1]
        assert slug not in name and name.endswith(("_case01", "_case02"))
        copy = tmp_path / "corpus" / name
        assert (copy / "candidate.py").read_text() == (corpus / case / "candidate.py").read_text()
        assert load_case(copy).category == load_case(corpus / case).category


class _Server:
    """A local endpoint that lists a model and answers chat completions, or drops the connection on them
    (as a llama.cpp server that dies on its first inference does)."""

    def __init__(self, chat_works: bool) -> None:
        import http.server
        import threading

        works = chat_works

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, payload: dict[str, object]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._send({"object": "list", "data": [{"id": "m", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not works:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self._send({"choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"}}]})

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_server_that_lists_models_but_cannot_answer_is_refused_before_any_case() -> None:
    llm_local = _llm_local()
    good, broken = _Server(chat_works=True), _Server(chat_works=False)
    try:
        llm_local.wait_ready(good.url, None, timeout_s=30)
        with pytest.raises(SystemExit, match="lists its models but a 1-token chat completion failed"):
            llm_local.wait_ready(broken.url, None, timeout_s=30)
    finally:
        good.close()
        broken.close()
