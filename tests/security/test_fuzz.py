"""Fuzzing (hypothesis): every RPC's request fields against a real server, and the spec and task-file
parsers. Whatever comes in: never UNKNOWN or INTERNAL, never a traceback, still SERVING after.
Example counts are kept small so the suite stays fast; the strategies lean on the values that broke
things before (path tricks, NUL, NaN, huge numbers, templates with access, backtracking patterns)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import grpc
import pytest
import yaml
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jitagent.harness.seeds import load_seeds
from jitagent.harness.spec import TEMPLATE_FIELDS, SpecError, parse_spec
from jitagent.tasks.task import TaskFileError, parse_tasks
from jitagent.v1 import jitagent_pb2 as pb

from ..jitagent.doors.conftest import free_port

SERVICE = pb.DESCRIPTOR.services_by_name["JitAgent"]
SEEDS = load_seeds()
SEED_IDS = [s.id for s in SEEDS.values()]
TRICKY = ["", " ", ".", "..", "../..", "/etc/passwd", "a/../b", "a\0b", "x" * 300, "{task:{0}}",
          "{task.__class__.__mro__}", "(a|aa)+$", "(", "none", "exact", "numeric", "regex", "python_tests",
          "shell_check", "reasoning_gym", "python", "shell", "read_file", "seed", "synthesized", "type:x",
          *SEED_IDS[:3]]
TEXT = st.one_of(st.text(max_size=30), st.sampled_from(TRICKY))
NUMBERS = {
    FieldDescriptor.TYPE_INT32: st.one_of(st.integers(-2**31, 2**31 - 1), st.integers(-3, 10)),
    FieldDescriptor.TYPE_INT64: st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(-3, 10)),
    FieldDescriptor.TYPE_UINT32: st.one_of(st.integers(0, 2**32 - 1), st.integers(0, 10)),
    FieldDescriptor.TYPE_DOUBLE: st.one_of(st.floats(), st.floats(0, 1)),
    FieldDescriptor.TYPE_BOOL: st.booleans(),
    FieldDescriptor.TYPE_ENUM: st.one_of(st.integers(0, 4), st.integers(-2**31, 2**31 - 1)),  # open enums
    FieldDescriptor.TYPE_STRING: TEXT,
}
# Fields always set, each mostly to a plausible value and sometimes to a bad one, so fuzzed requests
# also get past validation into the pipeline, the sandbox and the bank.
PLAUSIBLE = {
    ("jitagent.v1.Task", "prompt"): st.one_of(st.text(min_size=1, max_size=40), TEXT),
    ("jitagent.v1.ReasoningGymEntry", "dataset"):
        st.sampled_from(["chain_sum", "count_bits", "", "telepathy"]),
    **{(f"jitagent.v1.{request}", "n"): st.one_of(st.integers(0, 2), NUMBERS[FieldDescriptor.TYPE_INT32])
       for request in ("SolveRequest", "SynthesizeRequest", "StreamTasksRequest")},
    **{(f"jitagent.v1.{request}", "task"): st.deferred(lambda: messages(pb.Task.DESCRIPTOR))
       for request in ("SolveRequest", "StreamTasksRequest")},
    ("jitagent.v1.SynthesizeRequest", "tasks"): st.deferred(lambda: st.lists(messages(pb.Task.DESCRIPTOR),
                                                                             max_size=2)),
    ("jitagent.v1.ReportOutcomeRequest", "harness_id"): st.one_of(st.sampled_from(SEED_IDS), TEXT),
    ("jitagent.v1.ReportOutcomeRequest", "task_text"): st.one_of(st.text(min_size=1, max_size=40), TEXT),
    ("jitagent.v1.ReportOutcomeRequest", "reward"): st.one_of(st.floats(0, 1), st.floats()),
    ("jitagent.v1.ReportOutcomeRequest", "wall_s"): st.one_of(st.floats(0, 100), st.floats()),
}
EXAMPLES = {"Synthesize": 10, "Solve": 10, "StreamTasks": 6}  # each runs the pipeline; the rest are cheap
BAD_CODES = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}


def messages(descriptor) -> st.SearchStrategy:
    """Any message of this type: each field set or not, to anything its type allows."""
    cls = message_factory.GetMessageClass(descriptor)
    fields, always = {}, {}
    for field in descriptor.fields:
        if (descriptor.full_name, field.name) in PLAUSIBLE:
            always[field.name] = PLAUSIBLE[descriptor.full_name, field.name]
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key, value = (field.message_type.fields_by_name[n] for n in ("key", "value"))
            fields[field.name] = st.dictionaries(values(key), values(value), max_size=3)
        elif field.is_repeated:
            fields[field.name] = st.lists(values(field), max_size=3)
        else:
            fields[field.name] = values(field)
    return st.fixed_dictionaries(always, optional=fields).map(lambda chosen: _build(cls, chosen))


def values(field) -> st.SearchStrategy:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return st.deferred(lambda: messages(field.message_type))
    return NUMBERS[field.type]


def _build(cls, chosen: dict):
    message = cls()
    for name, value in chosen.items():
        target = getattr(message, name)
        if isinstance(value, dict):
            for k, v in value.items():
                target[k] = v
        elif isinstance(value, list):
            for item in value:
                if hasattr(target, "add"):  # a repeated message
                    target.add().CopyFrom(item)
                else:
                    target.append(item)
        elif hasattr(value, "DESCRIPTOR"):
            target.CopyFrom(value)
        else:
            setattr(message, name, value)
    return message


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real `jitagent serve` (scripted models) on a free port; its log for tracebacks."""
    work = tmp_path_factory.mktemp("fuzz")
    port = free_port()
    log = (work / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "jitagent", "serve", "--port", str(port), "--data-dir",
                             str(work / "data"), "--meta-model", "scripted", "--no-dry-run", "--n", "1"],
                            stdout=log, stderr=subprocess.STDOUT)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    health = health_pb2_grpc.HealthStub(channel)
    end = time.monotonic() + 180
    while not serving(health):
        if time.monotonic() > end or proc.poll() is not None:
            pytest.fail(f"the server did not start: {(work / 'server.log').read_text()[-2000:]}")
        time.sleep(0.3)
    yield channel, health, work / "server.log"
    channel.close()
    proc.terminate()
    proc.wait(30)
    log.close()


def serving(health) -> bool:
    try:
        status = health.Check(health_pb2.HealthCheckRequest(), timeout=2).status
    except grpc.RpcError:
        return False
    return status == health_pb2.HealthCheckResponse.SERVING


def invoke(channel, method, request):
    """One call of `method` with `request` (a list of them for a client stream); the status code."""
    path = f"/{SERVICE.full_name}/{method.name}"
    response_type = message_factory.GetMessageClass(method.output_type)
    kw = {"request_serializer": lambda m: m.SerializeToString(),
          "response_deserializer": response_type.FromString}
    try:
        if method.client_streaming:
            list(channel.stream_stream(path, **kw)(iter(request), timeout=120))
        elif method.server_streaming:
            list(channel.unary_stream(path, **kw)(request, timeout=120))
        else:
            channel.unary_unary(path, **kw)(request, timeout=120)
    except grpc.RpcError as err:
        return err.code(), err.details()
    return grpc.StatusCode.OK, ""


@pytest.mark.parametrize("method", list(SERVICE.methods), ids=lambda m: m.name)
def test_every_rpc_answers_any_request_with_a_deliberate_status(server, method):
    channel, _, _ = server
    requests = messages(method.input_type)
    if method.client_streaming:
        requests = st.lists(requests, min_size=1, max_size=3)

    @settings(max_examples=EXAMPLES.get(method.name, 30), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(request=requests)
    def check(request):
        code, details = invoke(channel, method, request)
        assert code not in BAD_CODES, f"{method.name}: {code.name}: {details}"
    check()


def test_the_server_is_serving_after_the_fuzz_and_logged_no_traceback(server):
    _, health, log = server
    assert serving(health)
    text = log.read_text()
    assert '"event": "serving"' in text and "Traceback" not in text


# --- the parsers ------------------------------------------------------------------------------

JSONISH = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | TEXT,
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                       max_leaves=30)
SPEC_KEYS = ["name", "description", "memory", "planning", "tools", "action", "prompts", "limits", "code",
             "envelope"]


def spec_like() -> st.SearchStrategy[dict]:
    """A seed with some of its fields replaced by anything (so deep fields are reached too)."""
    seed = SEEDS["codeact"].model_dump(mode="json")
    pieces = st.sampled_from([*(f"{{{f}}}" for f in TEMPLATE_FIELDS), *TRICKY])
    templates = st.lists(pieces, max_size=4).map("".join)
    stages = st.sampled_from(["memory", "planning", "answer", "x"])
    section = st.one_of(JSONISH, st.fixed_dictionaries({"step": templates, "system": templates}),
                        st.fixed_dictionaries({"stage": stages, "source": TEXT}))
    changes = st.dictionaries(st.sampled_from(SPEC_KEYS), section, max_size=3)
    return changes.map(lambda changed: {**seed, **changed})


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@settings(max_examples=100, deadline=None, database=None)
@given(st.one_of(spec_like(), JSONISH, st.text(max_size=200), st.integers(1, 20_000).map(deep),
                 spec_like().map(json.dumps), spec_like().map(yaml.safe_dump)))
def test_the_spec_parser_raises_only_spec_errors(data):
    try:
        spec = parse_spec(data)
    except SpecError as exc:
        assert str(exc)
        return
    filled = {f: "" for f in TEMPLATE_FIELDS}  # a spec that validates always fills its templates
    assert isinstance(spec.prompts.system.format_map(filled) + spec.prompts.step.format_map(filled), str)


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(st.one_of(JSONISH.map(json.dumps), st.text(max_size=100), st.integers(1, 20_000).map(deep),
                          st.fixed_dictionaries({"id": TEXT, "prompt": TEXT},
                                                optional={"files": st.dictionaries(TEXT, TEXT, max_size=3),
                                                          "verifier": JSONISH}).map(json.dumps)),
                max_size=4))
def test_the_task_file_parser_raises_only_task_file_errors(lines):
    try:
        tasks = parse_tasks(lines, "fuzz.jsonl")
    except TaskFileError as exc:
        assert str(exc).startswith("fuzz.jsonl:")
        return
    assert all(t.id and t.prompt for t in tasks)
    assert all(math.isfinite(t.verifier.tolerance) for t in tasks)
