"""Fleet mode: many replicas and workers on one bank (PostgreSQL), task queues on Redis Streams."""
