"""A TCP relay in front of the server that a test can cut, to drop connections
the way a network does: no close frame, the client only sees the socket die."""

import asyncio


class Relay:
    def __init__(self, target_port):
        self.target_port = target_port
        self.blocked = False
        self._writers = set()
        self._server = None
        self.port = 0

    @property
    def ws_url(self):
        return f"ws://127.0.0.1:{self.port}/connection/websocket"

    async def start(self):
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, down_r, down_w):
        if self.blocked:
            down_w.transport.abort()
            return
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            down_w.transport.abort()
            return
        self._writers.update((down_w, up_w))
        await asyncio.gather(self._pipe(down_r, up_w, down_w), self._pipe(up_r, down_w, up_w))

    async def _pipe(self, reader, writer, other):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            for w in (writer, other):
                self._writers.discard(w)
                w.transport.abort()

    def cut(self):
        """Drops every relayed connection and refuses new ones until restore."""
        self.blocked = True
        for w in list(self._writers):
            w.transport.abort()
        self._writers.clear()

    def restore(self):
        self.blocked = False

    async def close(self):
        self.cut()
        self._server.close()
        await self._server.wait_closed()
