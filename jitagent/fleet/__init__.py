"""Fleet mode: task queues on Redis Streams (`queue`) and the PostgreSQL and Redis services the fleet
runs on (`services`). May import: common, config, tasks.
"""
