"""How the stand-ins listen: on 127.0.0.1 at --port, 0 (the default) for a port the kernel
picks, which they report on stdout as `listening on 127.0.0.1:PORT` once they accept. A
test never chooses the port itself: a port chosen, released and bound again by a child a
moment later can be taken in between (tests/common/ports.rs reads the report).
"""

import asyncio


async def serve(on_connection, port=0):
    server = await asyncio.start_server(on_connection, "127.0.0.1", port)
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


async def serve_wyoming(handler_factory, port=0):
    """Serve a Wyoming event handler per connection, as wyoming's AsyncTcpServer does."""

    async def on_connection(reader, writer):
        await handler_factory(reader, writer).run()

    await serve(on_connection, port)
