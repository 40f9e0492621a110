"""What of a long text goes back to the model."""

from jitagent.runtime.clipping import head_and_tail


def test_a_text_within_the_limit_is_kept_whole():
    assert head_and_tail("abc", 3) == "abc"
    assert head_and_tail("", 10) == ""


def test_a_longer_text_keeps_its_head_and_tail_and_says_how_much_was_cut():
    text = "".join(str(i % 10) for i in range(10_000))
    clipped = head_and_tail(text, 300)
    head, marker, tail = clipped.split("\n")
    assert (head, tail) == (text[:200], text[-100:])
    assert marker == "[... 9,700 characters cut ...]"
