"""The solver learns from the bank: training data from its verified runs."""
