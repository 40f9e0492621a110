"""Tasks through the wire (jitagent.v1 bytes) and back: unchanged, for every task of every built-in suite."""

import pytest

from jitagent.protocol.tasks import VERIFIER_KINDS, RequestError, task_from_proto, task_to_proto
from jitagent.tasks.task import Task, VerifierSpec, load_suite, suite_names
from jitagent.v1 import jitagent_pb2 as pb


def through_the_wire(task: Task) -> Task:
    return task_from_proto(pb.Task.FromString(task_to_proto(task).SerializeToString()))


@pytest.mark.parametrize("suite", suite_names())
def test_every_task_of_every_built_in_suite_round_trips_unchanged(suite):
    tasks = load_suite(suite)
    kinds = {t.verifier.kind for t in tasks}
    assert tasks and kinds - {"none"}
    for task in tasks:
        assert through_the_wire(task) == task, task.id


def test_what_the_suites_do_not_show_round_trips_too():
    tasks = [
        Task(id="a", prompt="p", tools=[]),
        Task(id="b", prompt="p", tools=["python"]),
        Task(id="c", prompt="p", verifier={"kind": "numeric", "expected": 0.25, "tolerance": 0.01}),
        Task(id="d", prompt="p", verifier={"kind": "regex", "pattern": "^a+$", "case_sensitive": True}),
        Task(id="e", prompt="p", verifier={"kind": "exact", "expected": "Yes"}, split="learn"),
        Task(id="g", prompt="p", verifier={"kind": "calls", "expected": '[{"f": {"x": [1, ""]}}]'}),
    ]
    for task in tasks:
        assert through_the_wire(task) == task
    assert through_the_wire(Task(id="f", prompt="p")).tools is None  # absent: every tool, not none


def test_a_task_that_cannot_be_one_names_the_field():
    for msg, field in (
        (pb.Task(prompt=" "), "task.prompt"),
        (pb.Task(prompt="p", split=9), "task.split"),
        (
            pb.Task(
                prompt="p",
                verifier=pb.Verifier(reasoning_gym=pb.ReasoningGymEntry(dataset="no-such-generator", size=1)),
            ),
            "task",
        ),
    ):
        with pytest.raises(RequestError) as refused:
            task_from_proto(msg)
        assert refused.value.violations[0][0] == field


@pytest.mark.parametrize(("msg", "said"), [
    (pb.Task(prompt="p", id="i" * 257), "id: String should have at most 256 characters"),  # names a record
    (pb.Task(prompt="p", type="t" * 257), "type: String should have at most 256"),  # names a cluster
    (pb.Task(prompt="p", tags=["a"] * 33), "tags: List should have at most 32 items"),
    (pb.Task(prompt="p", tags=["a" * 257]), "tags.0: String should have at most 256"),
])
def test_a_tasks_labels_are_bounded_and_the_refusal_names_the_label(msg, said):
    """A client's id, type and tags name records and clusters (issue 45): bounded, never a text."""
    with pytest.raises(RequestError) as refused:
        task_from_proto(msg)
    assert said in str(refused.value) and len(str(refused.value)) < 400


def test_the_verifier_kinds_are_one_table_the_wire_mirrors_by_name():
    """Every kind but `none` is the Verifier oneof's field of the same name, whose message's fields are the
    spec's fields of the same names: a new kind needs its spec fields and its message, no converter line."""
    oneof = pb.Verifier.DESCRIPTOR.oneofs_by_name["kind"]
    assert {f.name for f in oneof.fields} == set(VERIFIER_KINDS) - {"none"}
    for field in oneof.fields:
        assert {f.name for f in field.message_type.fields} <= set(VerifierSpec.model_fields), field.name


def test_client_tools_and_the_tool_choice_round_trip_and_a_schema_that_is_not_json_names_its_field():
    tools = [{"name": "total", "description": "An order's total.",
              "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}]
    task = Task(id="c", prompt="Total of A-1?", client_tools=tools, tool_choice="total")
    assert through_the_wire(task) == task
    one_a_reply = task.model_copy(update={"parallel_calls": False})
    assert through_the_wire(one_a_reply) == one_a_reply
    msg = task_to_proto(task)
    msg.client_tools[0].parameters = "{not json"
    with pytest.raises(RequestError, match=r"task.client_tools\[0\].parameters: not JSON"):
        task_from_proto(msg)
    msg.client_tools[0].parameters = '{"type": "objekt"}'
    with pytest.raises(RequestError, match="not a JSON Schema"):
        task_from_proto(msg)
