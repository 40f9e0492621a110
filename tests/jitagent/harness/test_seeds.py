from jitagent.harness.seeds import load_seeds, resolve_harness

# the order the seeds enter a bank (their files' NN_ prefix), which its listing and index follow
ORDER = ["direct", "react", "plan_and_execute", "reflexion", "self_refine", "self_consistency",
         "program_of_thought", "codeact", "rewoo", "least_to_most", "recursive", "tree_of_thoughts",
         "test_driven"]


def test_thirteen_seeds_from_their_files_in_order_with_distinct_ids():
    seeds = load_seeds()
    assert list(seeds) == ORDER  # control_prompts.yaml beside them is not a seed
    assert len({s.id for s in seeds.values()}) == 13
    assert all(s.envelope.origin == "seed" and s.description for s in seeds.values())


def test_a_harness_is_a_seed_by_name_or_a_spec_file(tmp_path):
    spec = tmp_path / "mine.yaml"
    spec.write_text(load_seeds()["react"].to_yaml())
    assert resolve_harness("react") is load_seeds()["react"]
    assert resolve_harness(str(spec)).id == load_seeds()["react"].id
