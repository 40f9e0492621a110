"""The bearer-token interceptor: an unknown method is UNIMPLEMENTED, with or without a token."""

import asyncio

import grpc
import pytest

from jitagent.doors.server import SERVICE_NAME, JitAgentServer


def test_unknown_methods_are_unimplemented_not_unknown(make_config):
    async def main():
        server = JitAgentServer(make_config(auth_token="s3cret"), build=lambda config: None)
        port = await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                for metadata in ((), (("authorization", "Bearer s3cret"),),
                                 (("authorization", "Bearer wrong"),)):
                    with pytest.raises(grpc.aio.AioRpcError) as err:
                        await channel.unary_unary(f"/{SERVICE_NAME}/NoSuchMethod")(b"", metadata=metadata)
                    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED, metadata
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    wrong = (("authorization", "Bearer wrong"),)
                    await channel.unary_unary(f"/{SERVICE_NAME}/GetHarness")(b"", metadata=wrong)
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        finally:
            await server.stop()
    asyncio.run(main())
