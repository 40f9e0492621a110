"""Request bytes that do not decode get INVALID_ARGUMENT naming the message type, not UNKNOWN.

grpc decodes a request before the servicer sees it and turns a DecodeError into UNKNOWN; this
interceptor hands the servicer's handlers raw bytes and decodes them itself, so it can answer.
"""

from __future__ import annotations

import inspect

import grpc
from google.protobuf.message import DecodeError


class RequestDecodingInterceptor(grpc.aio.ServerInterceptor):
    async def intercept_service(self, continuation, details: grpc.HandlerCallDetails):
        handler = await continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        return _decoding(handler)


def _decoding(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    deserialize = handler.request_deserializer

    async def decode(raw: bytes, context):
        try:
            return deserialize(raw)
        except DecodeError:
            name = getattr(getattr(deserialize, "__self__", None), "DESCRIPTOR", None)
            what = f"a valid {name.full_name}" if name else "a valid request message"
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"request: the bytes are not {what}")

    async def decoded_stream(raw_iterator, context):
        async for raw in raw_iterator:
            yield await decode(raw, context)

    kw = {"request_deserializer": None, "response_serializer": handler.response_serializer}
    if handler.unary_unary or handler.unary_stream:
        behavior = handler.unary_unary or handler.unary_stream
        make = (grpc.unary_unary_rpc_method_handler if handler.unary_unary
                else grpc.unary_stream_rpc_method_handler)
        if inspect.isasyncgenfunction(behavior):
            async def unary_generator(raw, context):
                async for response in behavior(await decode(raw, context), context):
                    yield response
            return make(unary_generator, **kw)

        async def unary(raw, context):
            return await behavior(await decode(raw, context), context)
        return make(unary, **kw)
    behavior = handler.stream_unary or handler.stream_stream
    make = (grpc.stream_unary_rpc_method_handler if handler.stream_unary
            else grpc.stream_stream_rpc_method_handler)
    if inspect.isasyncgenfunction(behavior):
        async def stream_generator(raw_iterator, context):
            async for response in behavior(decoded_stream(raw_iterator, context), context):
                yield response
        return make(stream_generator, **kw)

    async def stream(raw_iterator, context):
        return await behavior(decoded_stream(raw_iterator, context), context)
    return make(stream, **kw)
