from harness_bank.admission import AdmissionPolicy, Stats

policy = AdmissionPolicy()


def stats(rewards, tokens=100, wall=1.0):
    return Stats.of(rewards, [tokens] * len(rewards), [wall] * len(rewards))


def test_first_incumbent_needs_runs_and_earned_reward():
    assert not policy.decide(stats([1.0]), None).promote  # one run (or one report) is not evidence
    assert not policy.decide(stats([0.0, 0.0, 0.0]), None).promote  # a harness that earned nothing
    decision = policy.decide(stats([0.0, 1.0, 0.0]), None)
    assert decision.promote and "first harness with 3 runs" in decision.reason


def test_higher_reward_beyond_noise_wins():
    decision = policy.decide(stats([1, 1, 1, 1, 1, 1, 1, 1]), stats([0, 0, 0, 0, 1, 0, 0, 0]))
    assert decision.promote and "higher reward beyond noise" in decision.reason


def test_lucky_single_run_does_not_displace_a_well_tested_incumbent():
    decision = policy.decide(stats([1.0]), stats([1, 0, 1, 1, 0, 1, 1, 0, 1, 1]))
    assert not decision.promote and "needs 3" in decision.reason


def test_small_lead_within_noise_is_not_enough_unless_cheaper():
    incumbent = stats([1, 0, 1, 0, 1, 0], tokens=500)
    same_cost = policy.decide(stats([1, 1, 0, 1, 0, 1], tokens=500), incumbent)
    assert not same_cost.promote and "tied within noise" in same_cost.reason
    cheaper = policy.decide(stats([1, 0, 1, 0, 1, 0], tokens=200), incumbent)
    assert cheaper.promote and "cheaper" in cheaper.reason


def test_tie_faster_wins_when_tokens_unknown():
    incumbent = Stats.of([1, 1, 0], [None] * 3, [5.0] * 3)
    candidate = Stats.of([1, 1, 0], [None] * 3, [1.0] * 3)
    decision = policy.decide(candidate, incumbent)
    assert decision.promote and "faster" in decision.reason


def test_clearly_worse_is_rejected_even_if_cheaper():
    decision = policy.decide(stats([0] * 8, tokens=10), stats([1] * 8, tokens=1000))
    assert not decision.promote and "not better" in decision.reason
