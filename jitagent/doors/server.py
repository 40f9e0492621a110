"""The server: grpc.aio with health, reflection, optional auth and TLS, metrics, graceful shutdown.

Start-up: workspaces and run cgroups left by a killed predecessor are removed; the port opens at
once with health NOT_SERVING (RPCs get UNAVAILABLE); models and the bank load in the background;
then SERVING, or, when they cannot load (a data dir that cannot be used, a model that is not
there), `serve_forever` raises StartupError with one line saying why. On SIGTERM: NOT_SERVING,
in-flight RPCs get `grace_s` to finish (then are cancelled, which stops their model and tool work),
the bank is flushed and closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import resource
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from pydantic import BaseModel, Field

from jitagent.common.errors import one_line
from jitagent.config.paths import bank_location, data_dir
from jitagent.doors.auth import BearerTokenInterceptor
from jitagent.doors.decoding import RequestDecodingInterceptor
from jitagent.doors.grpc_service import JitAgentService
from jitagent.doors.metrics import Metrics
from jitagent.doors.openai_http import OpenAIDoor
from jitagent.sandbox.launch import reclaim_leftovers
from jitagent.solving.access import Access, AccessError
from jitagent.solving.assembly import build_pipeline
from jitagent.solving.config import PipelineConfig
from jitagent.solving.confinement import ALLOW_UNCONFINED
from jitagent.solving.layer import Solving
from jitagent.v1 import jitagent_pb2 as pb
from jitagent.v1 import jitagent_pb2_grpc as pb_grpc

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["JitAgent"].full_name
if TYPE_CHECKING:  # a door works through the solving layer; the pipeline it is handed is only a type here
    from jitagent.solving.pipeline import JitPipeline

log = logging.getLogger("jitagent.server")


class StartupError(RuntimeError):
    """The server cannot serve (its data dir, bank or models); the message is one line, `status` the
    exit status its kind of failure gets (a bank's service that wants a password: 2; else 1)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


class ServerConfig(BaseModel):
    """What `serve` runs with; its settings (`--host`, `--concurrency` and the rest) are these fields."""

    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(50051, ge=0, le=65535, description="port to listen on (0: any free port)")
    data_dir: Path = Field(default_factory=data_dir)
    bank: str | None = Field(None, description="bank file or postgresql:// URL; default: data_dir/bank.db")
    meta_model: str = "embedded"
    solver_model: str | None = None  # default: the meta-model
    api_key: str | None = Field(None, repr=False)  # an OpenAI-compatible endpoint's token; never logged
    concurrency: int = Field(1, ge=1, le=64, description="tasks synthesized/executed at once")
    max_queue: int = Field(64, ge=0, description="tasks waiting beyond which calls get RESOURCE_EXHAUSTED")
    max_concurrent: int = Field(128, ge=1, description="solves open at once (Solve and Synthesize calls, "
                                                       "task streams) beyond which RESOURCE_EXHAUSTED is "
                                                       "returned at once")
    auth_token: str | None = Field(None, repr=False)  # one token: its holder is the operator
    tokens_file: Path | None = Field(None, description="tenants' and roles' tokens, by their SHA-256 "
                                     "(`jitagent tokens add`); instead of one token")
    tls_cert: Path | None = Field(None, description="PEM certificate (with --tls-key: TLS)")
    tls_key: Path | None = Field(None, description="PEM private key")
    metrics_port: int | None = Field(None, ge=0, le=65535,
                                     description="serve Prometheus metrics on this port")
    max_message_mb: int = Field(4, ge=1, le=256)
    grace_s: float = Field(10.0, ge=0, description="seconds in-flight calls get on SIGTERM")
    openai_port: int | None = Field(None, ge=0, le=65535, description="also serve the OpenAI-compatible HTTP "
                                    "API (/v1/chat/completions) on this port, on the same pipeline")
    keepalive_s: float = Field(5.0, gt=0, description="a streamed HTTP answer's keep-alive comments, apart")
    allow_unconfined: bool = Field(False, description=ALLOW_UNCONFINED)
    log_format: str = "json"
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)


class JitAgentServer:
    def __init__(self, config: ServerConfig, build: Callable[[ServerConfig], JitPipeline] | None = None):
        self.config = config
        self.build = build or pipeline_for
        self.metrics = Metrics()
        self.solving = Solving(concurrency=config.concurrency, max_queue=config.max_queue,
                               max_concurrent=config.max_concurrent, on_result=self.metrics.record_result,
                               access=access_for(config), allow_unconfined=config.allow_unconfined)
        self.metrics.watch(self.solving)
        self.service = JitAgentService(self.metrics, self.solving)
        self.health = health.aio.HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.port: int | None = None
        self.ready = asyncio.Event()
        self.openai: OpenAIDoor | None = None  # the OpenAI-compatible HTTP door, with --openai-port
        self.openai_port: int | None = None
        self._loading: asyncio.Task | None = None
        self.load_error: str | None = None
        self.load_status = 1

    async def start(self) -> int:
        open_files = raise_open_files_limit()
        reclaimed = await asyncio.to_thread(reclaim_leftovers)
        if reclaimed:
            log.info(json.dumps({"event": "reclaimed", "leftovers": reclaimed}))
        limit = self.config.max_message_mb << 20
        access = self.solving.access
        interceptors = [] if access.open else [BearerTokenInterceptor(access)]
        interceptors.append(RequestDecodingInterceptor())
        self.server = grpc.aio.server(interceptors=interceptors, options=[
            ("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", 0)])  # else a second server binds the same port and takes half the calls
        pb_grpc.add_JitAgentServicer_to_server(self.service, self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME),
                                            self.server)
        address = f"{self.config.host}:{self.config.port}"
        try:
            if self.config.tls_cert and self.config.tls_key:
                creds = grpc.ssl_server_credentials([(self.config.tls_key.read_bytes(),
                                                      self.config.tls_cert.read_bytes())])
                self.port = self.server.add_secure_port(address, creds)
            else:
                self.port = self.server.add_insecure_port(address)
        except OSError as exc:
            raise StartupError(f"TLS: {exc.filename}: {exc.strerror}") from None
        except RuntimeError:  # grpc says only "Failed to bind"
            raise StartupError(f"cannot listen on {address}: the port is in use (another server?) or the "
                               f"host is not this machine's; choose another with --port or --host") from None
        for name in ("", SERVICE_NAME):
            await self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.start()
        if self.config.metrics_port is not None:
            self.metrics.serve(self.config.metrics_port, self.config.host)
        if self.config.openai_port is not None:
            await self._open_openai_door()
        self._loading = asyncio.create_task(self._load())
        log.info(json.dumps({"event": "listening", "address": f"{self.config.host}:{self.port}",
                             "tls": bool(self.config.tls_cert), "open_files_limit": open_files}))
        return self.port

    async def _open_openai_door(self) -> None:
        """The HTTP door on the same pipeline, admitted through the same slots, behind the same token."""
        config = self.config
        self.openai = OpenAIDoor(self.solving, keepalive_s=config.keepalive_s)
        address = f"{config.host}:{config.openai_port}"
        try:
            self.openai_port = await self.openai.start(config.host, config.openai_port,
                                                       tls_cert=config.tls_cert, tls_key=config.tls_key,
                                                       grace_s=config.grace_s)
        except OSError as exc:
            await self.server.stop(None)
            raise StartupError(f"cannot serve the OpenAI-compatible API on {address} (--openai-port): "
                               f"{exc.strerror or exc}") from None
        log.info(json.dumps({"event": "listening", "door": "openai",
                             "address": f"{config.host}:{self.openai_port}", "tls": bool(config.tls_cert)}))

    async def _load(self) -> None:
        try:
            self.solving.pipeline = await asyncio.to_thread(self.build, self.config)
        except Exception as exc:  # stay NOT_SERVING and say why, in one line
            self.load_error = self.solving.load_error = one_line(exc)
            self.load_status = getattr(exc, "status", 1)
            log.error(json.dumps({"event": "load_failed", "error": self.load_error}))
            return
        for name in ("", SERVICE_NAME):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self.ready.set()
        log.info('{"event": "serving"}')

    async def stop(self) -> None:
        await self.health.enter_graceful_shutdown()
        if self.openai is not None:
            await self.openai.stop()
        if self.server is not None:
            await self.server.stop(self.config.grace_s)
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        self.solving.close()  # flushes the bank's index
        log.info('{"event": "stopped"}')

    async def serve_forever(self) -> None:
        """Serve until SIGTERM or SIGINT; StartupError when models or the bank cannot load."""
        await self.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({stopping, self._loading}, return_when=asyncio.FIRST_COMPLETED)
        if self.load_error is None:
            await stopping
        stopping.cancel()
        await self.stop()
        if self.load_error is not None:
            raise StartupError(self.load_error, self.load_status)


def access_for(config: ServerConfig) -> Access:
    if config.tokens_file is not None and config.pipeline.retrain.every:
        raise StartupError("--retrain-every with --tokens-file: an adapter trained online on every tenant's "
                           "verified runs would serve every tenant; not yet scoped by tenant")
    try:
        return Access.configured(config.auth_token, config.tokens_file)
    except AccessError as exc:
        raise StartupError(str(exc)) from None


def raise_open_files_limit() -> int:
    """The soft limit on open descriptors raised to the hard one, and what it is after: at the usual
    1,024, a thousand idle clients of the HTTP door left gRPC none to accept with."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):  # e.g. a hard limit past the kernel's nr_open
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def pipeline_for(config: ServerConfig) -> JitPipeline:
    return build_pipeline(bank_location(config.bank, config.data_dir), cache_dir=config.data_dir,
                          meta_model=config.meta_model, solver_model=config.solver_model,
                          api_key=config.api_key,
                          config=config.pipeline, preload=True)  # the first request must not pay for loading
