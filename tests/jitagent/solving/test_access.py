"""Who is calling (issue 45): tokens to tenants and roles, one config for every door."""

import json

import pytest

from jitagent.solving.access import OPERATOR, Access, AccessError, Caller, add_token, digest


def test_an_open_deployment_takes_everyone_as_the_operator_and_one_token_makes_its_holder_the_operator():
    assert Access().open and Access().caller(None) == OPERATOR
    one = Access.one_token("s3cret")
    assert not one.open
    assert one.caller("Bearer s3cret") == OPERATOR and one.caller(b"bearer s3cret") == OPERATOR
    wrong = (None, "", "Bearer", "Bearer wrong", "Basic s3cret", "s3cret")
    assert [one.caller(h) for h in wrong] == [None] * len(wrong)


def test_a_tokens_file_names_each_tokens_tenant_and_role_and_holds_no_token(tmp_path):
    path = tmp_path / "tokens.json"
    client = add_token(path, "team-a", "client")
    operator = add_token(path, "ops", "operator")
    stored = path.read_text()
    assert client not in stored and operator not in stored and digest(client) in stored
    access = Access.configured(None, path)
    assert access.caller(f"Bearer {client}") == Caller(tenant="team-a", role="client", max_batch=64)
    assert access.caller(f"Bearer {operator}").operator
    assert access.caller("Bearer " + digest(client)) is None  # the file's hash is not a token


@pytest.mark.parametrize(("content", "said"), [
    ("{", "not JSON"),
    ('{"tokens": []}', "tokens: List should have at least 1 item"),
    ('{"tokens": [{"token_sha256": "ab", "tenant": "t"}]}', "tokens.0.token_sha256"),
    ('{"tokens": [{"token_sha256": "%s", "tenant": "Team A"}]}' % ("a" * 64), "tokens.0.tenant"),
    ('{"tokens": [{"token_sha256": "%s", "tenant": "t", "role": "root"}]}' % ("a" * 64), "tokens.0.role"),
    (json.dumps({"tokens": [{"token_sha256": "a" * 64, "tenant": "t"}] * 2}), "a token is listed twice"),
    (json.dumps({"tokens": [{"token_sha256": "a" * 64, "tenant": "a"},
                            {"token_sha256": "b" * 64, "tenant": "b", "pool": "a"}]}), "pool 'a' is also a"),
    (json.dumps({"tokens": [{"token_sha256": "a" * 64, "tenant": "t", "teaches": ["numeric", "vibes"]}]}),
     "teaches: 'vibes' is none of exact, numeric"),
])
def test_a_tokens_file_that_cannot_be_used_is_one_line_naming_it_and_the_problem(tmp_path, content, said):
    path = tmp_path / "tokens.json"
    path.write_text(content)
    with pytest.raises(AccessError) as err:
        Access.configured(None, path)
    message = str(err.value)
    assert message.startswith(f"--tokens-file {path}: ") and said in message and "\n" not in message


def test_one_token_and_a_tokens_file_at_once_is_refused_and_a_missing_file_is_named(tmp_path):
    path = tmp_path / "tokens.json"
    add_token(path, "team-a", "client")
    with pytest.raises(AccessError, match="not both"):
        Access.configured("s3cret", path)
    with pytest.raises(AccessError, match="No such file"):
        Access.configured(None, tmp_path / "absent.json")
