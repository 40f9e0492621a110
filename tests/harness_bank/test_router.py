"""The bandit on synthetic clusters with known arm success rates (no model, no bank) and its priors
from the nearest past tasks (real bank)."""

import random
from collections import Counter
from dataclasses import replace

from harness_bank import Outcome
from harness_bank.router import ArmEvidence, Router, RouterConfig
from jitagent.harness.seeds import load_seeds

SEEDS = load_seeds()


def simulate(rates: dict[str, float], tasks: int, seed: int = 0, config: RouterConfig | None = None,
             tokens: dict[str, float] | None = None) -> list[str]:
    """A cluster served for `tasks` tasks: each pull earns Bernoulli(rate) and is fed back; a
    synthesize pull adds a new variant that succeeds at `rates["variant"]` (default 0.3)."""
    router = Router(config or RouterConfig(synth_start=0, synth_floor=0, unproven=1.0))
    rng = random.Random(seed)
    record = {name: [0, 0.0] for name in rates}
    pulls = []
    for _ in range(tasks):
        evidence = [ArmEvidence(harness_id=name, name=name, origin="seed", runs=n, reward_sum=s,
                                mean_tokens=(tokens or {}).get(name))
                    for name, (n, s) in record.items()]
        runs = sum(n for n, _ in record.values())
        base = sum(s for _, s in record.values()) / runs if runs else 0.5
        choice = router.choose(evidence, base, rng)
        if choice.route == "synthesized":
            pulls.append("synthesized")
            name = f"variant{len(pulls)}"
            rates[name] = rates.get("variant", 0.3)
            record[name] = [0, 0.0]
        else:
            name = choice.arm.evidence.harness_id
            pulls.append(name)
        record[name][0] += 1
        record[name][1] += float(rng.random() < rates[name])
    return pulls


def test_most_pulls_go_to_the_best_arm_within_60_tasks():
    rates = {"weak": 0.2, "middling": 0.5, "strong": 0.8}
    late = Counter()
    for seed in range(10):
        late.update(simulate(rates, 60, seed)[30:])  # tasks 31-60 of each of 10 clusters
    assert late["strong"] / sum(late.values()) >= 0.7


def test_a_harness_that_errors_or_times_out_loses_share():
    # errors and timeouts are recorded as reward 0: the arm's share falls toward nothing
    for seed in range(5):
        pulls = simulate({"broken": 0.0, "working": 0.6}, 80, seed=seed)
        assert pulls[:20].count("broken") / 20 > pulls[-40:].count("broken") / 40 and pulls[-40:].count(
            "broken") <= 2


def test_exploration_never_stops_entirely():
    router = Router(RouterConfig())
    assert router.synth_share(10_000) == RouterConfig().synth_floor > 0
    assert router.synth_share(0) == 1.0 and router.synth_share(2) == 0.5  # halves at the half-life
    streams = [simulate({"best": 0.9, "other": 0.5}, 400, seed=s, config=RouterConfig()) for s in range(5)]
    for pulls in streams:
        assert 0 < pulls[200:].count("synthesized") < 40
        assert pulls[200:].count("other") + sum(p.startswith("variant") for p in pulls[200:]) > 0
    # early on a new cluster's evidence is thin: variants take a large share (a rate over streams, as one
    # stream's count moves with every draw of its shared generator)
    assert sum(pulls[:20].count("synthesized") for pulls in streams) / len(streams) >= 3


def test_an_arm_with_no_outcome_anywhere_is_rarely_explored_beside_one_with_evidence():
    known = ArmEvidence(harness_id="known", name="known", origin="seed", runs=4, reward_sum=2.0)
    unproven = ArmEvidence(harness_id="new", name="new", origin="seed")
    share = {}
    for unproven_prior in (1.0, 0.25):
        router = Router(RouterConfig(synth_start=0, synth_floor=0, unproven=unproven_prior))
        picks = [router.choose([known, unproven], 0.5, random.Random(s)).arm.evidence.name
                 for s in range(200)]
        share[unproven_prior] = picks.count("new") / len(picks)
    assert share[1.0] > 0.35 and share[0.25] < 0.25, share  # the default doubts what has never run


def test_ties_go_to_fewer_tokens():
    router = Router(RouterConfig(synth_start=0, synth_floor=0, tie_margin=1.0))  # every draw a tie
    evidence = [ArmEvidence(harness_id=name, name=name, origin="seed", runs=10, reward_sum=8.0,
                            mean_tokens=tokens)
                for name, tokens in (("costly", 900), ("cheap", 300), ("unknown", None))]
    picks = {router.choose(evidence, 0.8, random.Random(s)).arm.evidence.name for s in range(20)}
    assert picks == {"cheap"}


def test_a_cold_clusters_priors_come_from_the_nearest_past_tasks(seeded_bank):
    rewoo, direct = SEEDS["rewoo"].id, SEEDS["direct"].id
    for i in range(6):  # a neighbouring cluster where rewoo always wins and direct never does
        text = (f"A shop sells {i + 3} apples at 2 dollars each and {i + 5} pears at 3 dollars each. "
                "Total cost?")
        for harness, prefix, reward in ((rewoo, "r", 1.0), (direct, "d", 0.0)):
            seeded_bank.record_outcome(Outcome(harness_id=harness, task_id=f"{prefix}{i}", task_text=text,
                                               reward=reward, prompt_tokens=50, completion_tokens=50,
                                               wall_s=1.0, cluster="type:shop"))
    task = "A farmer sells 7 apples at 2 dollars each and 4 pears at 3 dollars each. What is the total?"
    evidence, base = seeded_bank.arm_evidence(task, "type:new", references=3)
    arms = {a.evidence.harness_id: a for a in Router().arms(evidence, base)}
    assert rewoo in arms and all(a.evidence.runs == 0
                                 for a in arms.values())  # no evidence in the cluster itself
    assert arms[rewoo].prior_mean > 0.7 and arms[rewoo].prior_weight == RouterConfig().prior_weight
    assert direct not in arms or arms[direct].prior_mean < 0.3
    assert max(arms.values(), key=lambda a: a.mean).evidence.harness_id == rewoo


def arm(name: str, runs: int, wins: float, tokens: float | None = 100.0) -> ArmEvidence:
    return ArmEvidence(harness_id=name, name=name, origin="seed", runs=runs, reward_sum=wins,
                       mean_tokens=tokens)


def test_exploring_runs_only_where_the_rest_of_the_stream_can_pay_it_back():
    router = Router(RouterConfig())
    at_ceiling = [arm("best", 10, 10.0), arm("other", 10, 6.0)]
    routes = Counter(router.choose(at_ceiling, 0.8, random.Random(s), seen=10).route for s in range(300))
    assert routes == {"exploit": 300}  # no draw of the other arm, and no variant of one that never failed
    close = [arm("a", 4, 2.0), arm("b", 4, 1.5)]
    routes = Counter(router.choose(close, 0.5, random.Random(s), seen=30).route for s in range(300))
    assert routes["explore"] > 30  # a long stream ahead and overlapping posteriors: worth finding out
    short = Counter(router.choose(close, 0.5, random.Random(s), seen=4).route for s in range(300))
    assert short["explore"] == 0  # the same evidence with too little stream left to learn anything in
    assert Counter(router.choose(close, 0.5, random.Random(s)).route for s in range(300))["explore"] \
        == Counter(Router(RouterConfig(horizon=1e9)).choose(close, 0.5, random.Random(s)).route
                   for s in range(300))["explore"]  # no horizon: every draw stands, as over a long stream


def test_an_arm_only_a_lucky_streak_could_lift_is_not_explored():
    # 1 of 3 against 2 of 3: one run cannot lift it above the best, and the runs it would take to learn
    # whether it is better cost more than 30 tasks can repay; over 300 they are worth it
    behind = [arm("a", 3, 2.0), arm("b", 3, 1.0)]
    router = Router(RouterConfig())
    assert Counter(router.choose(behind, 0.5, random.Random(s), seen=30).route
                   for s in range(300))["explore"] == 0
    assert Counter(router.choose(behind, 0.5, random.Random(s), seen=300).route
                   for s in range(300))["explore"] > 20


def test_a_horizon_is_a_number_of_tasks():
    import pytest
    from pydantic import ValidationError

    for bad in (float("inf"), float("nan"), -1.0):
        with pytest.raises(ValidationError):
            RouterConfig(horizon=bad)


def test_lookahead_excess_matches_draws():
    import numpy as np

    from harness_bank.router import lookahead_excess

    rng = np.random.default_rng(0)
    alpha, beta, level, runs = 3.5, 2.5, 0.7, 6
    wins = rng.binomial(runs, rng.beta(alpha, beta, 400_000))
    means = (alpha + wins) / (alpha + beta + runs)
    assert abs(lookahead_excess(alpha, beta, level, runs) - np.maximum(means - level, 0).mean()) < 1e-3
    assert lookahead_excess(alpha, beta, level, 0) == max(alpha / (alpha + beta) - level, 0)


def test_where_nothing_solves_the_cheapest_arm_runs_and_a_dearer_one_must_earn_its_tokens():
    nothing = [arm("cheap", 4, 0.0, 200), arm("dear", 4, 0.0, 900), arm("dearest", 4, 0.0, 3000)]

    def picks(config: RouterConfig, evidence: list[ArmEvidence]) -> Counter:
        router = Router(config)
        return Counter(router.choose(evidence, 0.05, random.Random(s), seen=40).arm.evidence.name
                       for s in range(300))

    priced = picks(RouterConfig(token_price=0.1, barren_runs=0), nothing)
    free = picks(RouterConfig(barren_runs=0), nothing)
    assert priced["cheap"] >= 250 and priced["dearest"] == 0  # tokens decide where reward cannot
    assert free["cheap"] < 200  # without a price every zero arm is drawn alike
    earns = [arm("cheap", 10, 5.0, 300), arm("dear", 10, 8.0, 900)]  # 30 points for 600 tokens: worth it
    assert picks(RouterConfig(token_price=0.1), earns).most_common(1)[0][0] == "dear"
    untried = [arm("cheap", 4, 0.0, 200), arm("new", 0, 0.0, None)]  # never ran: not charged, still tried
    assert picks(RouterConfig(token_price=0.1, unproven=1.0), untried)["new"] > 0


def test_a_barren_cluster_runs_its_cheapest_arm_until_a_success():
    router = Router(RouterConfig())  # barren after 12 runs that earned less than half a success
    untried = replace(arm("reference", 0, 0.0, None), global_runs=50, global_reward=0.9)
    barren = [arm("cheap", 4, 0.01, 200), arm("dear", 8, 0.3, 900), untried]

    def routes(evidence: list[ArmEvidence], config: RouterConfig | None = None) -> Counter:
        chosen = Counter()
        for s in range(300):
            choice = (Router(config) if config else router).choose(evidence, 0.05, random.Random(s), seen=40)
            chosen[choice.arm.evidence.name if choice.route != "synthesized" else "synthesized"] += 1
        return chosen

    picks = routes(barren)
    assert set(picks) == {"cheap", "synthesized"} and picks["synthesized"] >= 5  # variants still looked for
    said = {(c.route, c.reason) for c in (router.choose(barren, 0.05, random.Random(s), seen=40)
                                            for s in range(20))}
    why = "cheap, the cheapest arm: a barren cluster (less than half a success in 12 runs)"
    assert ("exploit", why) in said
    assert routes(barren[:1] + [arm("dear", 7, 0.3, 900), untried])["reference"] > 0  # 11 runs: not yet
    one_success = [arm("cheap", 4, 0.0, 200), arm("dear", 8, 1.0, 900), untried]
    assert routes(one_success)["reference"] > 0  # a success ends it
    unknown = [arm("cheap", 6, 0.0, None), arm("dear", 6, 0.0, None), untried]
    assert routes(unknown)["reference"] > 0  # no arm of known tokens to call the cheapest: drawn as before
    assert routes(barren, RouterConfig(barren_runs=0))["reference"] > 0  # 0: the rule is off


def test_exploring_a_dearer_arm_must_pay_back_its_tokens_too():
    from harness_bank.router import pays_back

    arms = Router(RouterConfig()).arms([arm("best", 6, 3.0, 300), arm("same", 6, 3.0, 2300)], 0.5)
    best, dear = arms
    assert pays_back(dear, best, 30, 32, price=0.0)  # the same reward: exploring costs nothing
    assert not pays_back(dear, best, 30, 32, price=0.1)  # 2,000 more tokens a task must buy 20 points
    assert pays_back(dear, best, 3000, 32, price=0.1)  # a long stream ahead may still repay finding out


def test_a_baseline_runs_once_in_a_cluster_before_any_draw_or_synthesis():
    router = Router(RouterConfig(synth_start=1, synth_floor=1))  # every draw would be a synthesis
    cold = [arm("written", 0, 0.0), arm("baseline", 0, 0.0)]
    first = frozenset({"baseline"})
    choices = [router.choose(cold, 0.5, random.Random(s), first=first) for s in range(20)]
    assert {(c.route, c.arm.evidence.name) for c in choices} == {("explore", "baseline")}
    assert "a baseline" in choices[0].reason
    measured = [arm("written", 2, 1.0), arm("baseline", 1, 0.0)]
    assert router.choose(measured, 0.5, random.Random(0), first=first).route == "synthesized"
