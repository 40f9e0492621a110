"""JIT synthesis: the meta-model writes, repairs and selects a task-specific harness."""
