"""The wire: tasks and verifiers as protobuf messages and back (`tasks`), results and events as protobuf
messages (`results`), the async client (`client`) and the sync SDK over it (`sdk`). The stubs themselves are
generated into `jitagent.v1`. May import: common, harness, tasks, solving's events and result, and v1.
"""
