"""A TCP relay in front of the server that reads what the server sends on each
WebSocket connection: the handshake response, then every frame as it is on the
wire (RSV1 set or not, payload length) and the message it carries, inflated on
its own when it is compressed. A client connects through it without knowing,
so that a test can check what its library hides: whether messages really
travelled compressed, and how many bytes they took. What the client sends is
read the same way (unmasked).

Each compressed message is inflated with a fresh inflater: gyre negotiates no
context takeover both ways, so a message that needs an earlier one's window
does not inflate here, and the tap records the error."""

import asyncio
import struct
import zlib
from dataclasses import dataclass

_TAIL = b"\x00\x00\xff\xff"


@dataclass
class Message:
    """One data message: compressed tells whether its first frame had RSV1,
    wire_bytes the size of its frames with their headers, data the message as
    the client's application sees it, error why it did not inflate."""

    opcode: int
    compressed: bool
    wire_bytes: int
    data: bytes
    error: str | None = None


class TappedConn:
    """What the server sent on one connection. Its from_client, a TappedConn
    too, is what the client sent: headers then are the handshake request's,
    and status 0."""

    def __init__(self, from_client=True):
        self.from_client = TappedConn(from_client=False) if from_client else None
        self._buf = b""
        self._shaken = False
        self.status = 0
        self.headers = {}  # of the handshake response, names in lower case
        self.bytes_from_server = 0
        self.messages = []
        # Control frames with RSV1 set, which RFC 7692 forbids.
        self.compressed_control_frames = 0
        self._partial = None

    @property
    def extensions(self):
        return self.headers.get("sec-websocket-extensions", "")

    def feed(self, chunk):
        self.bytes_from_server += len(chunk)
        self._buf += chunk
        if not self._shaken and not self._read_handshake():
            return
        while self._read_frame():
            pass

    def _read_handshake(self):
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = self._buf[:end].decode("latin-1").split("\r\n")
        # A response's status line; a request line (GET ...) leaves 0.
        code = lines[0].split(" ")[1] if " " in lines[0] else ""
        self.status = int(code) if code.isdigit() else 0
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                self.headers[name.strip().lower()] = value.strip()
        self._buf = self._buf[end + 4 :]
        self._shaken = True
        return True

    def _read_frame(self):
        b = self._buf
        if len(b) < 2:
            return False
        fin, rsv1, opcode = b[0] & 0x80, b[0] & 0x40, b[0] & 0x0F
        length, head = b[1] & 0x7F, 2
        if length == 126:
            if len(b) < 4:
                return False
            (length,) = struct.unpack(">H", b[2:4])
            head = 4
        elif length == 127:
            if len(b) < 10:
                return False
            (length,) = struct.unpack(">Q", b[2:10])
            head = 10
        masked = b[1] & 0x80
        if masked:
            head += 4  # a client's frames are masked, a server's not
        if len(b) < head + length:
            return False
        payload = b[head : head + length]
        if masked:
            key = b[head - 4 : head]
            payload = bytes(x ^ key[i % 4] for i, x in enumerate(payload))
        self._buf = b[head + length :]
        if opcode >= 0x8:
            if rsv1:
                self.compressed_control_frames += 1
            return True
        if opcode != 0:
            self._partial = [opcode, bool(rsv1), 0, []]
        if self._partial is None:
            return True  # a continuation without a start
        self._partial[2] += head + length
        self._partial[3].append(payload)
        if fin:
            op, compressed, wire, parts = self._partial
            self._partial = None
            self.messages.append(_finish(op, compressed, wire, b"".join(parts)))
        return True


def _finish(opcode, compressed, wire_bytes, raw):
    msg = Message(opcode, compressed, wire_bytes, raw)
    if compressed:
        try:
            msg.data = zlib.decompressobj(-15).decompress(raw + _TAIL)
        except zlib.error as e:
            msg.error = str(e)
    return msg


def _strip_extensions(head):
    """The handshake request head without its Sec-WebSocket-Extensions lines."""
    lines = head.split(b"\r\n")
    kept = [l for l in lines if not l.lower().startswith(b"sec-websocket-extensions:")]
    return b"\r\n".join(kept)


class WireTap:
    """Relays connections to 127.0.0.1:target_port, recording each one as a
    TappedConn in conns, in the order they came. With strip_offers, it takes
    the client's extension offers out of the handshake request, so that the
    server sees a client that offers no compression."""

    def __init__(self, target_port, strip_offers=False):
        self.target_port = target_port
        self.strip_offers = strip_offers
        self.conns = []
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
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            down_w.transport.abort()
            return
        conn = TappedConn()
        self.conns.append(conn)
        self._writers.update((down_w, up_w))
        if self.strip_offers:
            try:
                head = await down_r.readuntil(b"\r\n\r\n")
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                down_w.transport.abort()
                up_w.transport.abort()
                return
            head = _strip_extensions(head)
            conn.from_client.feed(head)
            up_w.write(head)
        await asyncio.gather(
            self._pipe(down_r, up_w, down_w, conn.from_client),
            self._pipe(up_r, down_w, up_w, conn),
        )

    async def _pipe(self, reader, writer, other, conn):
        try:
            while data := await reader.read(65536):
                if conn is not None:
                    conn.feed(data)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            for w in (writer, other):
                self._writers.discard(w)
                w.transport.abort()

    async def close(self):
        for w in list(self._writers):
            w.transport.abort()
        self._writers.clear()
        self._server.close()
        await self._server.wait_closed()
