"""Tasks and suites (`task`), the verifiers that turn an answer into a reward (`verifiers`), and the suites
that ship with the package (`suites`). May import: common, harness, sandbox.
"""
