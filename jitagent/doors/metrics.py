"""Prometheus metrics: per-RPC counts and latency, queue depth, routes, candidates, tokens."""

from __future__ import annotations

import asyncio
import time
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server


@dataclass
class Call:
    code: str = "OK"


def ended_by(exc: BaseException, context) -> str:
    """The status of a call that raised: grpc cancels a call whose client deadline passed, and that
    is DEADLINE_EXCEEDED, not CANCELLED."""
    if not isinstance(exc, asyncio.CancelledError):
        return "ERROR"
    remaining = context.time_remaining()
    return "DEADLINE_EXCEEDED" if remaining is not None and remaining <= 0.01 else "CANCELLED"


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("jitagent_rpc_requests", "RPCs by method and status code", ["method", "code"],
                                registry=r)
        self.latency = Histogram("jitagent_rpc_latency_seconds", "RPC latency", ["method"], registry=r,
                                 buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                                          10, 30, 60, 120))
        self.queue_depth = Gauge("jitagent_queue_depth", "tasks waiting for a pipeline slot", registry=r)
        self.in_flight = Gauge("jitagent_tasks_in_flight", "tasks being synthesized or executed", registry=r)
        self.routes = Counter("jitagent_routes", "route taken per task", ["route"], registry=r)
        self.candidates = Counter("jitagent_candidates", "synthesized candidates by outcome", ["outcome"],
                                  registry=r)
        self.tokens = Counter("jitagent_tokens", "tokens by phase (known counts only)", ["phase"], registry=r)
        self.unknown_tokens = Counter("jitagent_unknown_token_counts", "costs whose token count was unknown",
                                      ["phase"], registry=r)

    @contextmanager
    def track(self, method: str, context):
        """Count and time one call; the yielded record's `code` is its status name once it ends."""
        start = time.perf_counter()
        call = Call()
        try:
            yield call
        except BaseException as exc:
            call.code = ended_by(exc, context)
            raise
        finally:
            code = context.code()  # set by context.abort / set_code; None means OK unless we raised
            call.code = code.name if code is not None else call.code
            self.requests.labels(method, call.code).inc()
            self.latency.labels(method).observe(time.perf_counter() - start)

    def watch(self, solving) -> None:
        """The queue depth and tasks in flight, as the solving layer counts them (every door's)."""
        self.queue_depth.set_function(lambda: solving.waiting)
        self.in_flight.set_function(lambda: solving.working)

    def record_result(self, result) -> None:
        self.routes.labels(result.route).inc()
        if result.synthesis:
            for c in result.synthesis.candidates:
                label = "repaired" if c.origin == "repaired" else ("valid" if c.valid else "broken")
                self.candidates.labels(label).inc()
        for phase, cost in result.phase_costs().items():
            if cost.tokens is None:
                self.unknown_tokens.labels(phase).inc()
            else:
                self.tokens.labels(phase).inc(cost.tokens)

    def serve(self, port: int, host: str = "127.0.0.1") -> None:
        start_http_server(port, addr=host, registry=self.registry)
