"""A small OpenAI-compatible server for tests: real HTTP on 127.0.0.1.

It answers POST /v1/chat/completions from a script: a list of entries, each
either a response body (dict), or {"status": N, "body": ..., "headers": {...}}
for errors, or {"raw": "text"} for a malformed body; {"delay": S, "body": ...}
answers after S seconds. Every request is
recorded (headers and JSON body) so tests can assert what was sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reply(content: str | None = None, tool_calls: list | None = None, prompt_tokens: int = 10, completion_tokens: int = 5) -> dict:
    message: dict = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
    }


class FakeOpenAI:
    def __init__(self, script: list | None = None) -> None:
        self.script = list(script or [])
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    entry = server.script.pop(0) if server.script else {"status": 500, "body": {"error": {"message": "fake server: script exhausted"}}}
                if isinstance(entry, dict) and "delay" in entry:
                    time.sleep(entry["delay"])
                    entry = entry.get("body", {})
                if self.path.rstrip("/") != "/v1/chat/completions":
                    entry = {"status": 404, "body": {"error": {"message": f"no route {self.path}"}}}
                status, headers, payload = 200, {}, entry
                if isinstance(entry, dict) and "status" in entry:
                    status, headers, payload = entry["status"], entry.get("headers") or {}, entry.get("body", {})
                data = entry["raw"].encode() if isinstance(entry, dict) and "raw" in entry else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, *entries) -> None:
        with self.lock:
            self.script.extend(entries)
