"""A small OpenAI-compatible server for tests: real HTTP on 127.0.0.1. It also speaks the
streaming forms real agent CLIs use (chat-completion chunks, the Responses API, Anthropic's
Messages API), so `pytest -m agent_cli` can point the CLIs at it.

It answers POST /v1/chat/completions from a script: a list of entries, each
either a response body (dict), or {"status": N, "body": ..., "headers": {...}}
for errors, or {"raw": "text"} for a malformed body; {"delay": S, "body": ...}
answers after S seconds. Every request is
recorded (headers and JSON body) so tests can assert what was sent.
"""

from __future__ import annotations

import json
import uuid
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


# POST routes that answer from the script: OpenAI chat completions, the Responses API (Codex),
# Anthropic's Messages API (Claude Code).
ROUTES = ("/v1/chat/completions", "/v1/responses", "/v1/messages")


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


def grounded(output: dict, evidence: dict | None = None) -> dict:
    """The extract model's answer as uwf asks for it: the output, and each field's quote (by
    default the field's own value, which the test's agent said)."""
    quotes = evidence if evidence is not None else {key: str(value) for key, value in output.items()}
    return reply(json.dumps({"output": output, "evidence": quotes}))


def fill_any_schema(body: dict) -> dict:
    """A stand-in extract model that fills whatever schema it is sent with invented values, each
    "supported" by an invented quote: what an LLM does when told to fill a form from an error."""
    import re

    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    match = re.search(r"JSON Schema:\n(\{.*\})\s*$", system, re.S)
    schema = json.loads(match[1]) if match else {"properties": {}}
    invented = {"string": "a plausible value", "number": 7, "integer": 3, "boolean": True, "array": ["item"], "object": {}}
    output = {}
    for name, spec in (schema.get("properties") or {}).items():
        kind = spec.get("type", "string")
        kind = kind[0] if isinstance(kind, list) else kind
        output[name] = spec["enum"][0] if "enum" in spec else invented.get(kind, "value")
    return grounded(output, {name: "as the agent clearly explained" for name in output})


def stream_chunks(payload: dict) -> list[dict]:
    """A chat completion as the chunks a streaming server sends: the message, the finish, the usage."""
    choice = payload["choices"][0]
    message = choice["message"]
    delta: dict = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(message["tool_calls"])]
    base = {"id": payload.get("id", "chatcmpl-test"), "object": "chat.completion.chunk", "created": 0, "model": "fake-model"}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason", "stop")}]},
        {**base, "choices": [], "usage": payload.get("usage")},
    ]


def response_events(payload: dict) -> list[tuple[str, dict]]:
    """A chat completion's text as the Responses API's stream (POST /v1/responses, as Codex uses)."""
    text = payload["choices"][0]["message"].get("content") or ""
    usage = payload.get("usage") or {}
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "fake-model", "output": []}
    completed = dict(response, status="completed", output=[item], usage={
        "input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0),
        "total_tokens": usage.get("total_tokens", 0), "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0}})
    return [
        ("response.created", {"type": "response.created", "response": response}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": dict(item, status="in_progress", content=[])}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": completed}),
    ]


def anthropic_message(payload: dict) -> dict:
    """A chat completion as an Anthropic Messages API reply (Claude Code's ANTHROPIC_BASE_URL): its
    text, or its tool calls as tool_use blocks."""
    usage = payload.get("usage") or {}
    message = payload["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    unique = uuid.uuid4().hex[:12]  # a conversation of several tool calls names each once (Claude Code waits on a repeated id)
    content = [{"type": "tool_use", "id": f"toolu_{unique}_{i}", "name": call["function"]["name"], "input": json.loads(call["function"]["arguments"])}
               for i, call in enumerate(calls)] or [{"type": "text", "text": message.get("content") or ""}]
    return {
        "id": f"msg_{unique}", "type": "message", "role": "assistant", "model": "fake-model", "content": content,
        "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)},
    }


def anthropic_events(payload: dict) -> list[tuple[str, dict]]:
    message = anthropic_message(payload)
    start = dict(message, content=[], stop_reason=None, usage={"input_tokens": message["usage"]["input_tokens"], "output_tokens": 0})
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            first, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            first, delta = dict(block, input={}), {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": first}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    return events + [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                           "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
        ("message_stop", {"type": "message_stop"}),
    ]


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
                route = self.path.split("?")[0].rstrip("/")
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    if route not in ROUTES:  # a side request (token counting, telemetry) takes no scripted answer
                        entry = {"status": 404, "body": {"error": {"message": f"no route {self.path}"}}}
                    elif server.script:
                        entry = server.script.pop(0)
                    else:
                        entry = {"status": 500, "body": {"error": {"message": "fake server: script exhausted"}}}
                if callable(entry):  # answers from what was asked (e.g. fill_any_schema)
                    entry = entry(body)
                if isinstance(entry, dict) and "delay" in entry:
                    time.sleep(entry["delay"])
                    entry = entry.get("body", {})
                streaming = isinstance(body, dict) and bool(body.get("stream"))
                if isinstance(entry, dict) and "choices" in entry:
                    if route == "/v1/responses":
                        return self._events(response_events(entry))
                    if route == "/v1/messages":
                        if streaming:
                            return self._events(anthropic_events(entry))
                        entry = anthropic_message(entry)
                    elif streaming:
                        return self._stream(entry)
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

            def _stream(self, payload: dict) -> None:
                """The same answer as server-sent events, for clients that always stream (real agent CLIs)."""
                self._events([(None, chunk) for chunk in stream_chunks(payload)], done=True)

            def _events(self, events: list, done: bool = False) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for name, data in events:
                    head = f"event: {name}\n" if name else ""
                    self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                if done:
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                self.close_connection = True

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
