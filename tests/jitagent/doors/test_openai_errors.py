"""The HTTP door's errors as OpenAI shapes them, without a server or a model: `param` names the part of the
request that is wrong, a path it does not serve is an error object too, and `GET /v1/models/{id}` answers
for the models it serves."""

import pytest
from starlette.testclient import TestClient

from jitagent.doors.openai_http import OpenAIDoor
from jitagent.solving.layer import Solving


@pytest.fixture
def http():
    # a pipeline that is never reached: every request here is refused
    door = OpenAIDoor(Solving(object()), keepalive_s=1.0)
    with TestClient(door.app) as client:
        yield client


def chat(**jitagent) -> dict:
    return {"model": "jitagent", "messages": [{"role": "user", "content": "hi"}], "jitagent": jitagent}


@pytest.mark.parametrize("body, param", [
    (chat(verifier={"kind": "exact", "expected": "4", "colour": "red"}), "jitagent.verifier"),
    (chat(verifier={"kind": "photographic"}), "jitagent.verifier"),
    (chat(expect="4", verifier={"kind": "none"}), "jitagent"),
    (chat(n=99), "jitagent.n"),
    (chat(n=0), "jitagent.n"),
    (chat(request_id="bad id!"), "jitagent.request_id"),
    ({"model": "jitagent", "messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
    ({"model": "jitagent", "messages": [{"role": "user", "content": ""}]}, "messages"),
])
def test_a_bad_request_names_its_param(http, body, param):
    answer = http.post("/v1/chat/completions", json=body)
    error = answer.json()["error"]
    assert answer.status_code == 400 and error["param"] == param and error["type"] == "invalid_request_error"


def test_feedback_names_its_param(http):
    answer = http.post("/v1/jitagent/feedback", json={"run_id": "r", "reward": "high"})
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "reward"


@pytest.mark.parametrize("name", ["jitagent", "jitagent/chain_sum"])
def test_a_model_it_serves_is_retrieved_as_openai_shows_one(http, name):
    answer = http.get(f"/v1/models/{name}")
    assert answer.status_code == 200
    assert answer.json() == {"id": name, "object": "model", "created": 0, "owned_by": "jitagent"}


@pytest.mark.parametrize("method, path, status, code, message", [
    ("GET", "/v1/models/gpt-4", 404, "model_not_found", "model 'gpt-4'"),
    ("GET", "/v1/embeddings", 404, None, "Invalid URL (GET /v1/embeddings)"),
    ("GET", "/v1/chat/completions", 405, None, "Invalid method for URL (GET /v1/chat/completions)"),
])
def test_what_it_does_not_serve_is_an_openai_error_object(http, method, path, status, code, message):
    answer = http.request(method, path)
    error = answer.json()["error"]
    assert answer.status_code == status and error["code"] == code and error["message"].startswith(message)
    assert error["type"] == "invalid_request_error"
