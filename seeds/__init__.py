"""The seed harness specs (`NN_name.yaml`, NN: the order they enter a bank) and the runtime's control
prompts, shipped as package data."""
