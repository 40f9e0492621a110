"""How harnesses get better, online and ahead of time: synthesis by the meta-model (`synthesis`), code written
for a cluster (`toolmaking`, `toolshop`), verified solutions shown as examples (`examples`), adapters
trained from verified runs (`training`, `adapters`, `retrain`), the mutations that cost no meta-model call
(`variants`), and a run recorded as the bank's evidence (`recording`). May import: common, models, sandbox,
harness, tasks, runtime, config, and the bank.
"""
