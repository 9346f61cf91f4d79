"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests: the only fake, at the network edge.

Each script item is one response to ``POST /v1/chat/completions`` or ``POST /v1/completions`` (a
fill-in-the-middle question: the item's content is the completion's text), served in order::

    {"content": "...", "usage": (prompt_tokens, completion_tokens)}   a normal reply
    {"status": 500}                                                     an HTTP error with a JSON error body
    {"delay_s": 3.0, "content": "...", "usage": (3, 4)}                 a slow reply (sleeps first)

Replies are plain JSON, or SSE chunks when the request says ``"stream": true`` (plus a final usage chunk
when ``stream_options.include_usage`` is set). An exhausted script answers HTTP 500 saying so.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class ScriptedOpenAIServer:
    """Context manager serving ``script`` over HTTP; ``requests`` holds the JSON bodies received, in order."""

    def __init__(self, script: list[dict]) -> None:
        self._script = list(script)
        self._served = 0
        self._lock = threading.Lock()
        self.requests: list[dict] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        # a slow reply the client already gave up on must not hold up shutdown
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedOpenAIServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, body: dict) -> dict | None:
        with self._lock:
            self.requests.append(body)
            if self._served >= len(self._script):
                return None
            item = self._script[self._served]
            self._served += 1
            return item

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    models = {"object": "list", "data": [
                        {"id": "scripted-model", "object": "model", "created": 0, "owned_by": "tests"}]}
                    self._send_json(200, models)
                else:
                    self._send_error(404, f"no route GET {self.path}")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError as exc:
                    self._send_error(400, f"request body is not JSON: {exc}")
                    return
                route = self.path.rstrip("/")
                if route not in ("/v1/chat/completions", "/v1/completions"):
                    self._send_error(404, f"no route POST {self.path}")
                    return
                body["_route"] = route
                item = server._next(body)
                if item is None:
                    self._send_error(500, f"scripted server: script exhausted after {len(server._script)} "
                                          "responses")
                    return
                time.sleep(float(item.get("delay_s", 0.0)))
                try:
                    if "status" in item:
                        status = int(item["status"])
                        self._send_error(status, item.get("message", f"scripted HTTP {status}"))
                    elif route == "/v1/completions":
                        if body.get("stream"):
                            self._send_error(400, "scripted server: streamed text completions not scripted")
                        else:
                            self._send_json(200, _text_completion(body, item))
                    elif body.get("stream"):
                        self._send_stream(body, item)
                    else:
                        self._send_json(200, _completion(body, item))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up, as some tests intend

            def _send_json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_error(self, status: int, message: str) -> None:
                kind = "server_error" if status >= 500 else "invalid_request_error"
                self._send_json(status, {"error": {"message": message, "type": kind, "code": status}})

            def _send_stream(self, body: dict, item: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()  # HTTP/1.0: the stream ends when the connection closes
                for chunk in _stream_chunks(body, item):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def _usage(item: dict) -> dict[str, int]:
    prompt, completion = item.get("usage", (0, 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _completion(body: dict, item: dict) -> dict:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted-model"),
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": item.get("content", "")},
            "finish_reason": "stop",
            "logprobs": None,
        }],
        "usage": _usage(item),
    }


def _text_completion(body: dict, item: dict) -> dict:
    return {
        "id": "cmpl-scripted",
        "object": "text_completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted-model"),
        "choices": [{"index": 0, "text": item.get("content", ""), "finish_reason": "stop", "logprobs": None}],
        "usage": _usage(item),
    }


def _stream_chunks(body: dict, item: dict) -> list[dict]:
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "scripted-model")}
    content = item.get("content", "")
    pieces = [content[i:i + 16] for i in range(0, len(content), 16)]
    deltas: list[dict] = [{"role": "assistant", "content": ""}] + [{"content": p} for p in pieces]
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": _usage(item)})
    return chunks
