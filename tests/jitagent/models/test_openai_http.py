"""The OpenAI-compatible client against a real llama.cpp server (llama-cpp-python) on loopback."""

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from jitagent.models.base import ModelError
from jitagent.models.gguf import model_path
from jitagent.models.openai_http import OpenAICompatibleModel, SchemaIgnored

pytestmark = pytest.mark.slow
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen) -> str:
    """`url` once the llama.cpp server `proc` answers there (its error, if it dies first)."""
    for _ in range(240):
        try:
            urllib.request.urlopen(url + "/v1/models", timeout=1)
            return url
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stderr.read().decode()[-2000:]) from None
            time.sleep(0.5)
    raise TimeoutError(f"no llama.cpp server at {url} after 120 s")


@pytest.fixture(scope="module")
def llama_server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model",
                             str(model_path("smollm2-135m")),
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--verbose",
                             "False"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    yield wait_for(f"http://127.0.0.1:{port}", proc)
    proc.terminate()
    proc.wait(10)


def complete(model, messages, **kw):
    return asyncio.run(model.complete(messages, **kw))


def test_chat_completion_counts_tokens(llama_server):
    model = OpenAICompatibleModel(llama_server)
    g = complete(model, [{"role": "user", "content": "Say hello."}], max_tokens=12)
    assert g.text.strip() and g.wall_s > 0
    assert g.usage.prompt_tokens > 0 and 0 < g.usage.completion_tokens <= 12


def test_structured_output_probes_the_dialect_this_server_speaks(llama_server):
    model = OpenAICompatibleModel(llama_server)  # dialect auto
    g = complete(model, [{"role": "user", "content": "A person as JSON."}], max_tokens=40, json_schema=SCHEMA)
    value = json.loads(g.text)
    assert set(value) >= {"name", "age"}
    assert model.dialect == "json_object"  # llama-cpp-python rejects response_format json_schema


def test_forcing_the_other_dialect_fails_loudly(llama_server):
    model = OpenAICompatibleModel(llama_server, dialect="json_schema")
    with pytest.raises(ModelError, match="no structured-output dialect accepted"):
        complete(model, [{"role": "user", "content": "A person as JSON."}], max_tokens=20, json_schema=SCHEMA)


def test_prefill_continues_the_assistant_reply(llama_server):
    model = OpenAICompatibleModel(llama_server)
    g = complete(model, [{"role": "user", "content": "Print 2+2 in Python."},
                         {"role": "assistant", "content": "```python\nprint("}], max_tokens=12, stop=["```"])
    assert not g.text.startswith("```") and g.usage.completion_tokens > 0


def test_n_candidates_in_one_call(llama_server):
    model = OpenAICompatibleModel(llama_server)
    g = complete(model, [{"role": "user", "content": "Name a color."}], max_tokens=6, temperature=1.0, seed=1,
                 n=3)
    assert len(g.texts) == 3 and g.usage.completion_tokens > 0


class _IgnoringHandler(BaseHTTPRequestHandler):
    """A server that accepts response_format and ignores it (the failure we must catch)."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        choice = {"message": {"content": "Sure! Here is a person: Bob, 42."}, "finish_reason": "stop"}
        usage = {"prompt_tokens": 5, "completion_tokens": 9}
        body = json.dumps({"choices": [choice], "usage": usage}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_server_that_ignores_the_schema_is_caught():
    server = HTTPServer(("127.0.0.1", 0), _IgnoringHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        model = OpenAICompatibleModel(f"http://127.0.0.1:{server.server_port}", dialect="json_schema")
        with pytest.raises(SchemaIgnored, match="ignored the JSON schema"):
            complete(model, [{"role": "user", "content": "x"}], json_schema=SCHEMA)
    finally:
        server.shutdown()


def test_missing_usage_is_unknown_not_zero():
    class NoUsage(_IgnoringHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    server = HTTPServer(("127.0.0.1", 0), NoUsage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        g = complete(OpenAICompatibleModel(f"http://127.0.0.1:{server.server_port}"),
                     [{"role": "user", "content": "x"}])
        assert g.usage.prompt_tokens is None and g.usage.completion_tokens is None and g.usage.total is None
    finally:
        server.shutdown()


def test_the_api_key_goes_as_a_bearer_token_from_the_argument_or_the_environment(monkeypatch):
    from jitagent.models import API_KEY_ENV, load_model

    seen = []

    class Recording(_IgnoringHandler):
        def do_POST(self):
            seen.append(self.headers.get("Authorization"))
            super().do_POST()
    server = HTTPServer(("127.0.0.1", 0), Recording)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        monkeypatch.setenv(API_KEY_ENV, "from-env")
        for model in (load_model(url, api_key="s3cret"), load_model(url)):
            complete(model, [{"role": "user", "content": "x"}])
            assert "s3cret" not in model.name and "from-env" not in model.name
    finally:
        server.shutdown()
    assert seen == ["Bearer s3cret", "Bearer from-env"]


def test_nothing_listening_is_one_clear_error_not_a_dialect_story():
    from jitagent.models.openai_http import Unreachable

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(Unreachable) as err:
            complete(OpenAICompatibleModel(f"http://127.0.0.1:{port}"), [{"role": "user", "content": "x"}],
                     json_schema=SCHEMA)
    assert str(err.value).startswith(f"cannot reach the model server at http://127.0.0.1:{port} (")
    assert "dialect" not in str(err.value) and "\n" not in str(err.value)


def test_the_deadline_bounds_the_whole_call_not_each_read():
    """A server that drips its reply a byte at a time never trips a per-read timeout; the call still ends
    at the deadline, and so does the next request of one that asks again for `n`."""
    from http.server import ThreadingHTTPServer

    from jitagent.models.base import Cancelled, CancelToken

    class Dripping(_IgnoringHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            for _ in range(50):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Dripping)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        model = OpenAICompatibleModel(f"http://127.0.0.1:{server.server_port}")
        start = time.monotonic()
        with pytest.raises(Cancelled, match="left") as cut:
            complete(model, [{"role": "user", "content": "x"}], cancel=CancelToken(start + 0.8))
        assert time.monotonic() - start < 1.5
        assert cut.value.usage.total is None  # what the server spent on it is unknown, not 0
    finally:
        server.shutdown()


def test_tools_go_to_the_servers_template_and_the_calls_its_parser_took_out_come_back_as_text():
    bodies = []

    class Parsing(_IgnoringHandler):
        def do_POST(self):
            bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            call = {"id": "c1", "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            choice = {"message": {"content": None, "tool_calls": [call]}, "finish_reason": "tool_calls"}
            body = json.dumps({"choices": [choice], "usage": {"prompt_tokens": 9, "completion_tokens": 4}})
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())
    server = HTTPServer(("127.0.0.1", 0), Parsing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    try:
        model = OpenAICompatibleModel(f"http://127.0.0.1:{server.server_port}")
        g = complete(model, [{"role": "user", "content": "Weather in Paris?"},
                             {"role": "assistant", "content": ""}], tools=tools)
        plain = complete(model, [{"role": "user", "content": "Weather in Paris?"}])
    finally:
        server.shutdown()
    assert bodies[0]["tools"] == tools and "messages" in bodies[0] and "tools" not in bodies[1]
    assert g.text == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert plain.text == g.text  # the server's reply, however it was asked
