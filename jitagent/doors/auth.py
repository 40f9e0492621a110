"""Bearer-token auth as a server interceptor, by the solving layer's access (jitagent.solving.access).
Health checks and reflection stay open."""

from __future__ import annotations

import grpc

from jitagent.solving.access import Access

OPEN_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, access: Access):
        self._access = access

    async def intercept_service(self, continuation, details: grpc.HandlerCallDetails):
        if details.method.startswith(OPEN_PREFIXES):
            return await continuation(details)
        given = dict(details.invocation_metadata or ()).get("authorization")
        if self._access.caller(given) is not None:
            return await continuation(details)
        handler = await continuation(details)
        return None if handler is None else _deny(handler)  # None: an unknown method, UNIMPLEMENTED


def _deny(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    async def unary(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")

    async def streaming(request, context):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
        yield  # pragma: no cover - makes this an async generator

    kw = {"request_deserializer": handler.request_deserializer,
          "response_serializer": handler.response_serializer}
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(unary, **kw)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(streaming, **kw)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(unary, **kw)
    return grpc.stream_stream_rpc_method_handler(streaming, **kw)
