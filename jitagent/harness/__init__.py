"""The harness spec (`spec`: the protocol and its prompts, limits, code and envelope) and the seed harnesses
that ship with the package (`seeds`). May import: common, sandbox (the tools' names).
"""
