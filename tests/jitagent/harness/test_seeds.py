import re

from jitagent.harness.seeds import load_seeds, native_seeds, offered, resolve_harness, seeds_for
from jitagent.tasks.task import ClientTool, Task

# the order the seeds enter a bank (their files' NN_ prefix), which its listing and index follow
ORDER = ["direct", "react", "plan_and_execute", "reflexion", "self_refine", "self_consistency",
         "program_of_thought", "codeact", "rewoo", "least_to_most", "recursive", "tree_of_thoughts",
         "test_driven", "plain"]


def test_the_seeds_from_their_files_in_order_with_distinct_ids():
    seeds = load_seeds()
    assert list(seeds) == ORDER  # control_prompts.yaml beside them is not a seed
    assert len({s.id for s in seeds.values()}) == len(ORDER)
    assert all(s.envelope.origin == "seed" and s.description for s in seeds.values())


def test_plain_runs_only_tasks_that_carry_the_clients_functions():
    plain, direct = load_seeds()["plain"], load_seeds()["direct"]
    calls = Task(id="t", prompt="The total of order A-1?", client_tools=[ClientTool(name="get_total")])
    bare = Task(id="u", prompt="What is 2 + 3?")
    assert offered(plain, calls) and not offered(plain, bare) and offered(direct, bare)
    assert list(seeds_for([bare])) == ORDER[:-1] and list(seeds_for([bare, calls])) == ORDER
    assert native_seeds() == (plain.id,)


def test_a_harness_is_a_seed_by_name_or_a_spec_file(tmp_path):
    spec = tmp_path / "mine.yaml"
    spec.write_text(load_seeds()["react"].to_yaml())
    assert resolve_harness("react") is load_seeds()["react"]
    assert resolve_harness(str(spec)).id == load_seeds()["react"].id


def test_no_seed_shows_an_example_shaped_like_a_task_of_our_suites():
    """A seed's few-shot pairs lift every arm measured with it: none may share a run of four words with any
    task of any project suite (every split), nor quote a word or phrase one of them has."""
    from jitagent.tasks.task import load_suite, suite_names

    def words(text: str) -> list[str]:
        return re.findall(r"[a-z0-9]+", text.lower())

    def runs(text: str) -> set[tuple]:
        w = words(text)
        return {tuple(w[i:i + 4]) for i in range(len(w) - 3)}

    def quoted(text: str) -> set[str]:
        pairs = re.findall(r"'([^'\n]{2,})'|\"([^\"\n]{2,})\"", text)
        return {q.lower() for pair in pairs for q in pair if q}

    prompts = [task.prompt for suite in suite_names() for task in load_suite(suite)]
    in_tasks = set().union(*(runs(p) | quoted(p) | set(words(p)) for p in prompts))
    shared = {(name, shot.user): sorted(map(str, (runs(text) | quoted(text)) & in_tasks))
              for name, spec in load_seeds().items() for shot in spec.prompts.few_shot
              for text in [shot.user + "\n" + shot.assistant]}
    assert {shot: marks for shot, marks in shared.items() if marks} == {}
