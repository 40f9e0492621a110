"""Generate the starter suite (jitagent/tasks/suites/starter.jsonl) deterministically.

Four task types chosen so the harness matters for a small model: exact multi-step arithmetic,
small Python functions checked by tests, workspace file tasks checked by a command, and
text extraction/formatting. Splits are assigned round-robin per type (learn/score/final 41/21/20), then
12 more tasks (3 per type) go to `final` so it holds 32.
Run: python scripts/make_starter_suite.py > jitagent/tasks/suites/starter.jsonl
"""

import json
import random

rng = random.Random(20261129)
tasks = []


def add(kind, prompt, verifier, **extra):
    tasks.append({"type": kind, "prompt": prompt, "verifier": verifier, **extra})


# 1. arithmetic word problems: exact answers a program gets right and a 0.5B model often does not
items = ["boxes", "crates", "bags", "packs", "trays", "bins"]
things = ["apples", "bolts", "pencils", "tiles", "cans", "books"]
def arithmetic(i, rng):
    a, b, c = rng.randint(120, 990), rng.randint(13, 97), rng.randint(100, 2000)
    it, th = rng.choice(items), rng.choice(things)
    form = i % 4
    if form == 0:
        text = (f"A warehouse has {a} {it} with {b} {th} in each. Then {c} {th} are shipped out. "
                f"How many {th} remain?")
        ans = a * b - c
    elif form == 1:
        d = rng.randint(3, 9)
        text = (f"A factory makes {a} {th} per day for {b} days, then splits them equally into {d} "
                f"shipments, rounding down. How many {th} are in each shipment?")
        ans = (a * b) // d
    elif form == 2:
        p = rng.randint(5, 45)
        text = (f"A shop sells {a} {th} at {b} dollars each, then gives a {p}% discount on the total. "
                "What is the total after the discount, in dollars?")
        ans = round(a * b * (100 - p) / 100, 2)
    else:
        text, ans = f"What is {a} * {b} + {c} * {b // 3 + 7} - {a + c}?", a * b + c * (b // 3 + 7) - (a + c)
    add("arithmetic", text, {"kind": "numeric", "expected": ans, "tolerance": 1e-6},
        tags=["math", "word_problem"])


for i in range(22):
    arithmetic(i, rng)

# 2. small python functions checked by hidden tests
functions = [
    ("reverse_words(s)", "returns the words of s in reverse order, joined by single spaces",
     "assert reverse_words('hello big world') == 'world big hello'\nassert reverse_words('a') == 'a'"),
    ("count_vowels(s)", "returns how many vowels (a, e, i, o, u, either case) s contains",
     "assert count_vowels('Programming') == 3\nassert count_vowels('xyz') == 0\nassert count_vowels('AEIOU') "
     "== 5"),
    ("is_palindrome(s)", "returns True if s reads the same backwards ignoring case and non-letters",
     "assert is_palindrome('A man, a plan, a canal: Panama')\nassert not is_palindrome('hello')"),
    ("digit_sum(n)", "returns the sum of the decimal digits of the non-negative integer n",
     "assert digit_sum(0) == 0\nassert digit_sum(9875) == 29"),
    ("fizzbuzz(n)",
     "returns a list of strings for 1..n: 'Fizz' for multiples of 3, 'Buzz' for 5, 'FizzBuzz' for both, else "
     "the number",
     "assert fizzbuzz(5) == ['1', '2', 'Fizz', '4', 'Buzz']\nassert fizzbuzz(15)[-1] == 'FizzBuzz'"),
    ("second_largest(xs)", "returns the second largest distinct value in the list xs",
     "assert second_largest([3, 1, 4, 4, 2]) == 3\nassert second_largest([10, 20]) == 10"),
    ("flatten(xs)", "flattens a list of lists (one level) into a single list",
     "assert flatten([[1, 2], [3], []]) == [1, 2, 3]\nassert flatten([]) == []"),
    ("word_lengths(s)", "returns a dict mapping each word of s to its length",
     "assert word_lengths('hi there') == {'hi': 2, 'there': 5}"),
    ("capitalize_words(s)",
     "returns s with the first letter of every word in upper case and the rest lower case",
     "assert capitalize_words('hELLO wORLD') == 'Hello World'"),
    ("primes_below(n)", "returns the sorted list of primes smaller than n",
     "assert primes_below(10) == [2, 3, 5, 7]\nassert primes_below(2) == []"),
    ("run_length(s)", "returns the run-length encoding of s, e.g. 'aaab' -> 'a3b1'",
     "assert run_length('aaab') == 'a3b1'\nassert run_length('') == ''\n"
     "assert run_length('abc') == 'a1b1c1'"),
    ("gcd(a, b)", "returns the greatest common divisor of two positive integers",
     "assert gcd(12, 18) == 6\nassert gcd(17, 5) == 1"),
    ("celsius_to_fahrenheit(c)", "converts degrees Celsius to Fahrenheit (c * 9 / 5 + 32)",
     "assert celsius_to_fahrenheit(100) == 212\nassert celsius_to_fahrenheit(-40) == -40"),
    ("unique_sorted(xs)", "returns the distinct values of xs in ascending order",
     "assert unique_sorted([3, 1, 3, 2, 1]) == [1, 2, 3]"),
    ("count_words(s)", "returns the number of whitespace-separated words in s",
     "assert count_words('  one two   three ') == 3\nassert count_words('') == 0"),
    ("max_subarray(xs)", "returns the largest sum of a non-empty contiguous sub-list of xs",
     "assert max_subarray([-2, 1, -3, 4, -1, 2, 1, -5, 4]) == 6\nassert max_subarray([-3, -1]) == -1"),
    ("chunk(xs, n)", "splits the list xs into consecutive lists of length n (the last may be shorter)",
     "assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]"),
    ("caesar(s, k)",
     "shifts each lowercase letter of s by k places in the alphabet (wrapping), leaving other characters",
     "assert caesar('abc xyz', 2) == 'cde zab'"),
    ("is_anagram(a, b)", "returns True if a and b contain the same letters, ignoring case and spaces",
     "assert is_anagram('Listen', 'Silent')\nassert not is_anagram('abc', 'abd')"),
    ("binary(n)",
     "returns the binary representation of the non-negative integer n as a string without prefix",
     "assert binary(10) == '1010'\nassert binary(0) == '0'"),
]


def python_function(sig, what, tests):
    add("python_function", f"Write a Python function `{sig}` that {what}.",
        {"kind": "python_tests", "tests": tests}, tags=["code", "python"], public_tests=tests.splitlines()[0])


for function in functions:
    python_function(*function)

# 3. workspace/file tasks checked by a command
def workspace(i, rng):
    form = i % 4
    nums = [rng.randint(1, 500) for _ in range(rng.randint(6, 12))]
    if form == 0:
        files = {"numbers.txt": "\n".join(map(str, nums)) + "\n"}
        text = ("The file numbers.txt has one integer per line. Write their sum to a new file total.txt "
                "(just the number).")
        check = f'test "$(tr -d " \\n" < total.txt)" = "{sum(nums)}"'
    elif form == 1:
        rows = [(f"item{j}", rng.randint(1, 50), rng.randint(1, 9)) for j in range(rng.randint(4, 8))]
        files = {"orders.csv": "name,price,qty\n" + "".join(f"{n},{p},{q}\n" for n, p, q in rows)}
        total = sum(p * q for _, p, q in rows)
        text = ("orders.csv has columns name,price,qty. Write the total of price*qty over all rows to "
                "revenue.txt (just the number).")
        check = f'test "$(tr -d " \\n" < revenue.txt)" = "{total}"'
    elif form == 2:
        words = [rng.choice(["alpha", "beta", "gamma", "delta", "omega", "sigma"])
                 for _ in range(rng.randint(8, 15))]
        files = {"words.txt": " ".join(words) + "\n"}
        text = "Write the distinct words of words.txt, sorted alphabetically, one per line, to sorted.txt."
        expected = "\\n".join(sorted(set(words)))
        check = f'test "$(cat sorted.txt)" = "$(printf "{expected}")"'
    else:
        n = rng.randint(3, 6)
        files = {f"logs/app{j}.log": "".join(rng.choice(["INFO ok\n", "ERROR failed\n", "WARN slow\n"])
                                             for _ in range(rng.randint(3, 9)))
                 for j in range(n)}
        errors = sum(v.count("ERROR") for v in files.values())
        text = ("The folder logs/ holds several .log files. Count the lines containing ERROR across all of "
                "them and write the count to errors.txt.")
        check = f'test "$(tr -d " \\n" < errors.txt)" = "{errors}"'
    add("workspace", text, {"kind": "shell_check", "command": check}, files=files, tags=["files", "shell"])


for i in range(20):
    workspace(i, rng)

# 4. text extraction and formatting
words = ["strawberry", "bookkeeper", "mississippi", "parallel", "committee", "assessment", "balloon",
         "banana"]


def text_task(i, rng):
    form = i % 5
    if form == 0:
        w, ch = rng.choice(words), None
        ch = rng.choice(sorted(set(w)))
        add("text", f"How many times does the letter '{ch}' occur in the word '{w}'? Answer with the number.",
            {"kind": "numeric", "expected": w.count(ch)}, tags=["string", "counting"])
    elif form == 1:
        w = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(7, 11)))
        add("text", f"Reverse the string '{w}'. Answer with the reversed string only.",
            {"kind": "exact", "expected": w[::-1], "case_sensitive": True}, tags=["string"])
    elif form == 2:
        user = rng.choice(["ana.ruiz", "j.smith", "li_wei", "omar.k", "sven99"])
        host = rng.choice(["example.org", "mail.test", "corp.example"])
        add("text",
            f"Extract the email address from this text: 'Please contact {user}@{host} before Friday, or call "
            "the office.' Answer with the email only.",
            {"kind": "exact", "expected": f"{user}@{host}"}, tags=["extraction"])
    elif form == 3:
        ws = rng.sample(["pear", "fig", "apple", "kiwi", "mango", "plum", "lime", "date", "grape"], 5)
        add("text",
            "Sort these words alphabetically and answer as a comma-separated list with no spaces: "
            f"{' '.join(ws)}",
            {"kind": "exact", "expected": ",".join(sorted(ws))}, tags=["formatting"])
    else:
        sentence = rng.choice(["the quick brown fox jumps over the lazy dog",
                               "pack my box with five dozen liquor jugs",
                               "sphinx of black quartz judge my vow", "how vexingly quick daft zebras jump"])
        add("text",
            f"Convert this sentence to snake_case (lowercase words joined by underscores): '{sentence}'",
            {"kind": "exact", "expected": sentence.replace(" ", "_"), "case_sensitive": True},
            tags=["formatting"])

for i in range(20):
    text_task(i, rng)

# 5. more `final` tasks (a separate RNG, so the tasks above and every learn/score task stay as they were):
# the bench wants >= 30 held-out tasks
base = len(tasks)
extra = random.Random(20261130)
for i in range(22, 25):
    arithmetic(i, extra)
for function in [
    ("rotate_left(xs, k)", "returns xs rotated left by k places (k may exceed the length)",
     "assert rotate_left([1, 2, 3, 4], 1) == [2, 3, 4, 1]\nassert rotate_left([1, 2, 3], 5) == [3, 1, 2]"),
    ("most_common_char(s)", "returns the character that occurs most often in s (the first one on ties)",
     "assert most_common_char('abracadabra') == 'a'\nassert most_common_char('xyy') == 'y'"),
    ("dedupe_keep_order(xs)", "returns xs without repeated values, keeping the first occurrence of each",
     "assert dedupe_keep_order([3, 1, 3, 2, 1]) == [3, 1, 2]\nassert dedupe_keep_order([]) == []"),
]:
    python_function(*function)
for i in range(20, 23):
    workspace(i, extra)
for i in range(20, 23):
    text_task(i, extra)

counters: dict[str, int] = {}
pattern = ["learn", "score", "learn", "final"]
for position, task in enumerate(tasks):
    n = counters.get(task["type"], 0)
    counters[task["type"]] = n + 1
    task["id"] = f"{task['type']}-{n + 1:03d}"
    task["split"] = "final" if position >= base else pattern[n % 4]
    print(json.dumps({"id": task.pop("id"), **task}))
