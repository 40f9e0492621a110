"""The ways in, each of which turns its wire into a task and an error kind into its status, and nothing more:
the gRPC service (`grpc_service`, with `auth`, `metrics`, `decoding`), the OpenAI-compatible HTTP door
(`openai_http`), MCP (`mcp`), the queue's worker (`worker`) and the process that serves them (`server`).
May import: protocol, the solving layer (never the pipeline or the bank), fleet, config, common, tasks.
"""
