from jitagent.common.usage import Usage, known_sum


def test_an_unknown_count_makes_its_sum_unknown_never_smaller():
    assert known_sum(3, 4, 5) == 12 and known_sum() == 0
    assert known_sum(3, None) is None
    assert Usage(10, 2) + Usage(5, 1) == Usage(15, 3) and (Usage(10, 2) + Usage(5, 1)).total == 18
    unknown_prompt = Usage(10, 2) + Usage(None, 1)
    assert unknown_prompt == Usage(None, 3) and unknown_prompt.total is None
