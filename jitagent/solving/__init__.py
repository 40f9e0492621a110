"""The solving layer under every door: validation, run ids, admission, deadlines and replay (`layer`); the
pipeline it drives (`pipeline`), routing decided in one function (`routing`), the events a solve streams
(`events`), the one flat result every door gives (`result`), outcomes reported later (`feedback`) and the
one place a pipeline is assembled (`assembly`). May import everything below the doors: common, models,
sandbox, harness, tasks, runtime, improvement, config, and the bank.
"""
