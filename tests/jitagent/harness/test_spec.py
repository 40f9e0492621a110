import json
import subprocess
import sys

import pytest

from jitagent.harness.seeds import load_seeds
from jitagent.harness.spec import HarnessSpec, SpecError, json_schema, parse_spec


def base() -> dict:
    return load_seeds()["codeact"].model_dump(mode="json")


def test_id_is_a_content_digest_independent_of_envelope():
    spec = load_seeds()["react"]
    child = spec.derive(origin="synthesized", parent_id=spec.id, generator="x")
    assert child.id == spec.id and child.envelope.parent_id == spec.id
    changed = base()
    changed["limits"]["max_steps"] = 7
    assert parse_spec(changed).id != load_seeds()["codeact"].id


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["tools"].update(tools=["python", "telnet"]), "tools.tools"),
    (lambda d: d["limits"].update(max_steps=500), "limits.max_steps"),
    (lambda d: d["prompts"].update(step="{task} {secret}"), "prompts.step"),
    (lambda d: d.update(bogus=1), "bogus"),
    (lambda d: d["action"].update(kind="telepathy"), "action.kind"),
    (lambda d: d["tools"].update(tools=["shell"]), "codeact"),
    (lambda d: d["tools"].update(tools=["python", "python"]), "duplicate"),
    (lambda d: d["prompts"].update(step="{task:{0}}"), "format specs are not allowed"),
    (lambda d: d["prompts"].update(system="{task!r}"), "conversions"),
    (lambda d: d["prompts"].update(step="{task.__class__.__mro__}"), "attribute and index access"),
    (lambda d: d["prompts"].update(step="{task[0]}"), "attribute and index access"),
    (lambda d: d["prompts"].update(step="{0} {}"), "unknown field"),
    (lambda d: d["prompts"].update(step="{task"), "malformed template"),
    (lambda d: d["prompts"].update(control={"judge": {"user": "{answer}"}}), "judge.user"),
    (lambda d: d["prompts"].update(control={"judge": {"verdict": "x"}}), "has no part 'verdict'"),
    (lambda d: d["prompts"].update(control={"vote": {"user": "x"}}), "unknown control prompt 'vote'"),
    (lambda d: d.update(code={"stage": "answer", "source": "def extract_answer(text)\n  return text"}),
     "SyntaxError"),
    (lambda d: d.update(code={"stage": "answer", "source": "def answer(text):\n  return text"}),
     "must define"),
    (lambda d: d.update(code={"stage": "memory", "source": "def view(msgs):\n  return msgs"}), "parameters"),
    (lambda d: d.update(code={"stage": "answer", "source": "x = " + "(" * 500 + ")" * 500}), "code"),
    (lambda d: d.update(code={"stage": "answer", "source": "#" * 30_000}), "code.0.source"),
])
def test_validation_errors_name_the_field(mutate, field):
    data = base()
    mutate(data)
    with pytest.raises(SpecError) as err:
        parse_spec(data)
    assert field in str(err.value)


def test_malformed_text_is_a_clear_error():
    with pytest.raises(SpecError, match="not valid YAML"):
        parse_spec("name: [unclosed")
    with pytest.raises(SpecError, match="must be a mapping"):
        parse_spec("[1, 2]")
    with pytest.raises(SpecError, match="nested deeper than"):
        parse_spec("a: " + "[" * 5000 + "]" * 5000)
    with pytest.raises(SpecError, match="aliases are not allowed"):
        parse_spec("a: &x [1, 2]\nb: *x")


def test_a_spec_that_validates_fills_its_templates_without_error():
    data = base()
    data["prompts"].update(system="{tools} {{literal}}", step="{task}\n{plan}{notes}{observation}")
    spec = parse_spec(data)
    assert spec.prompts.step.format_map({}.fromkeys(("task", "plan", "notes", "observation"), ""))


def test_a_spec_that_replaces_no_control_prompt_dumps_and_digests_without_them():
    spec = load_seeds()["tree_of_thoughts"]
    assert "control" not in spec.model_dump()["prompts"]
    data = spec.model_dump(mode="json")
    data["prompts"]["control"] = {"judge": {"system": "Pick the best of:\n{candidates}"}}
    changed = parse_spec(data)
    assert changed.id != spec.id and parse_spec(changed.to_yaml()) == changed


def test_yaml_round_trip():
    spec = load_seeds()["plan_and_execute"]
    assert parse_spec(spec.to_yaml()) == spec


def test_json_schema_describes_the_protocol():
    schema = json_schema()
    for stage in ("memory", "planning", "tools", "action", "prompts", "limits", "code", "envelope"):
        assert stage in schema["properties"]


def test_cli_validate_accepts_seeds_and_rejects_broken(tmp_path):
    from importlib import resources

    seed_file = resources.files("jitagent.seeds").joinpath("01_direct.yaml")
    ok = subprocess.run([sys.executable, "-m", "jitagent", "validate", str(seed_file)], capture_output=True,
                        text=True)
    assert ok.returncode == 0, ok.stderr
    broken = tmp_path / "broken.json"
    data = base()
    data["memory"]["kind"] = "photographic"
    broken.write_text(json.dumps(data))
    bad = subprocess.run([sys.executable, "-m", "jitagent", "validate", str(broken)], capture_output=True,
                         text=True)
    assert bad.returncode == 1 and "memory.kind" in bad.stderr


@pytest.mark.parametrize("name, text, message", [
    ("missing.yaml", None, "missing.yaml: No such file or directory"),
    ("broken.yaml", "name: x\n  bad: [\n",
     "broken.yaml: not valid YAML/JSON: mapping values are not allowed here (line 2, column 6)"),
])
def test_cli_validate_of_a_file_it_cannot_read_is_one_usage_line(tmp_path, name, text, message):
    """No spec to check: the file named is wrong (status 2), said in one line with the command's name."""
    if text is not None:
        (tmp_path / name).write_text(text)
    done = subprocess.run([sys.executable, "-m", "jitagent", "validate", name], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == f"jitagent validate: {message}\n", done.stderr


def test_cli_seeds_json_lists_every_seed_from_any_directory(tmp_path):
    out = subprocess.run([sys.executable, "-m", "jitagent", "seeds", "--json"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.returncode == 0
    assert len(json.loads(out.stdout)) == len(load_seeds())


def test_harness_spec_defaults_are_valid():
    spec = HarnessSpec(name="x", description="y")
    assert spec.id and spec.action.kind == "direct"


def test_one_code_section_keeps_its_id_and_several_need_distinct_stages():
    data = load_seeds()["direct"].model_dump(mode="json")
    data["code"] = {"stage": "answer", "source": "def extract_answer(text):\n    return text\n"}
    one = parse_spec(data)
    assert one.id == "9e532f8a5c705397"  # as before a spec could carry several (re-pinned: direct's example)
    assert one.model_dump(mode="json")["code"] == data["code"] and one.code_for("answer") is not None
    data["code"] = [data["code"], {"stage": "solve", "source": "def solve(task):\n    return None\n"}]
    two = parse_spec(data)
    assert [c.stage for c in two.code_sections] == ["answer", "solve"] and parse_spec(two.to_yaml()) == two
    data["code"] = [data["code"][0], data["code"][0]]
    with pytest.raises(SpecError, match="one section per stage"):
        parse_spec(data)


def test_a_spec_with_the_client_functions_described_keeps_its_id_and_native_is_another_harness():
    direct = load_seeds()["direct"]
    assert direct.tools.client == "described" and "client" not in direct.model_dump(mode="json")["tools"]
    assert direct.id == "35cc52bf3a98baab"  # as before a spec could name how the client's functions are shown
    data = direct.model_dump(mode="json")
    data["tools"]["client"] = "native"
    native = parse_spec(data)
    assert native.tools.client == "native" and native.id != direct.id
    assert parse_spec(native.to_yaml()) == native
    data["tools"]["client"] = "shown"
    with pytest.raises(SpecError, match="client"):
        parse_spec(data)
