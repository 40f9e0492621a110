"""The agent runtime: the loop that runs a harness on a task (`agent`, `run`), its stages (`memory`,
`planning`, `actions`, `verify`, `voting`), the events and result of a run (`events`), and one harness over a
list of tasks (`evaluate`). Knows nothing of the bank. May import: common, models, sandbox, harness, tasks.
"""
