"""WebSocket compression (permessage-deflate) with Python's websockets and
centrifuge-python on top of it, on the memory engine and on Redis.

centrifuge-python opens its connection with websockets.connect() and leaves its
compression argument alone, so it offers permessage-deflate like every
websockets client. The tests check what is negotiated, that a fan-out's
publications arrive in order and intact, and, read off the wire by a tap
between client and server, that the large ones travelled compressed (each
inflating on its own) and the small ones plain."""

import asyncio
import random
import string

import pytest
import websockets

from gyre_sdk import connected, new_client, new_sub, publish, subscribed, unique_channel
from gyre_server import GyreServer, base_config
from redis_server import RedisServer, redis_skip
from wiretap import WireTap

# compression_min_size: the replies to connect and subscribe and the small
# publications are shorter, so they must go plain.
MIN_SIZE = 512
EXTENSION = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"


def compression_config(port):
    cfg = base_config(port)
    cfg["websocket"] = {"compression": True, "compression_min_size": MIN_SIZE}
    return cfg


class Nodes:
    """Clients connect to sub, the test publishes through pub: the same server
    on the memory engine, another node on Redis, so that publications reach
    the subscribers' node only through Redis."""

    def __init__(self, engine):
        self.redis = None
        self.servers = []
        try:
            if engine == "memory":
                self.servers.append(GyreServer(compression_config))
            else:
                self.redis = RedisServer()
                for name in ("sub", "pub"):
                    self.servers.append(GyreServer(self._on_redis(name)))
        except BaseException:
            self.stop()
            raise
        self.sub, self.pub = self.servers[0], self.servers[-1]

    def _on_redis(self, name):
        def config(port):
            cfg = compression_config(port)
            cfg["node"] = {"name": f"node-{name}"}
            cfg["engine"] = {"type": "redis", "redis": {"address": [self.redis.addr]}}
            return cfg

        return config

    def stop(self):
        for s in self.servers:
            s.stop()
        if self.redis:
            self.redis.stop()


@pytest.fixture(
    scope="module",
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.skipif(bool(redis_skip()), reason=redis_skip())),
    ],
)
def nodes(request):
    n = Nodes(request.param)
    yield n
    n.stop()


@pytest.fixture
async def tap(nodes):
    t = await WireTap(nodes.sub.port).start()
    yield t
    await t.close()


def publications():
    """About 1 KB of JSON with the repetition of real application data (records
    of one shape) and, between them, small ones under MIN_SIZE, each with a
    marker of its own so that the tap finds the message that carried it."""
    tag = "".join(random.choices(string.ascii_lowercase + string.digits, k=6))
    out = []
    for k in range(8):
        if k % 3 == 1:
            out.append({"marker": f"small-{tag}-{k}", "seq": k})
            continue
        rows = [
            {
                "sensor": f"sensor-{r}",
                "status": "ok" if (r + k) % 4 else "warning",
                "unit": "celsius",
                "value": 18 + (k * 7 + r) % 11,
                "updated": f"2026-11-28T10:{k:02d}:0{r % 10}Z",
            }
            for r in range(10)
        ]
        out.append({"marker": f"big-{tag}-{k}", "seq": k, "kind": "readings", "rows": rows})
    return out


def check_wire(conn, sent, deflate):
    """Checks what the tap saw on a connection that received sent: the
    extension negotiated or not, every message whole and those under MIN_SIZE
    plain, each large publication compressed to at most a third of its size.
    Returns the bytes the large publications took on the wire and inflated."""
    assert conn.status == 101
    assert conn.extensions == (EXTENSION if deflate else "")
    assert conn.compressed_control_frames == 0
    shown = "\n  ".join(
        f"{'deflate' if m.compressed else 'plain'} {m.wire_bytes}B on the wire, {len(m.data)}B"
        for m in conn.messages
    )
    for m in conn.messages:
        assert m.error is None, f"a message did not inflate on its own: {m.error}"
        if len(m.data) < MIN_SIZE:
            assert not m.compressed, f"a message of {len(m.data)} bytes was compressed:\n  {shown}"
        if not deflate:
            assert not m.compressed, f"compressed without deflate negotiated:\n  {shown}"
    wire = plain = 0
    for p in sent:
        marker = f'"{p["marker"]}"'.encode()
        carrying = [m for m in conn.messages if marker in m.data]
        assert len(carrying) == 1, f"{p['marker']} is in {len(carrying)} messages:\n  {shown}"
        m = carrying[0]
        if deflate and p["marker"].startswith("big-"):
            assert m.compressed, f"{p['marker']} ({len(m.data)} bytes) went uncompressed"
            assert m.wire_bytes * 3 <= len(m.data), (
                f"{p['marker']} took {m.wire_bytes} bytes on the wire for {len(m.data)}"
            )
            wire += m.wire_bytes
            plain += len(m.data)
    return wire, plain


def client_extensions(client):
    """The extensions in use on the SDK's websockets connection (a private
    attribute: the SDK does not expose its connection)."""
    return [e.name for e in client._conn.protocol.extensions]


@pytest.mark.parametrize("offer", ["deflate", None], ids=["offered", "not-offered"])
async def test_websockets_negotiates_no_context_takeover(nodes, offer):
    async with websockets.connect(nodes.sub.ws_url, compression=offer) as ws:
        answered = ws.response.headers.get("Sec-WebSocket-Extensions", "")
        if offer is None:
            assert answered == ""
            assert ws.protocol.extensions == []
            return
        assert answered == EXTENSION
        [ext] = ws.protocol.extensions
        assert ext.name == "permessage-deflate"
        # Local is the client: neither side keeps its window between messages.
        assert ext.remote_no_context_takeover and ext.local_no_context_takeover, repr(ext)


async def test_sdk_receives_compressed_fanout_in_order_and_intact(nodes, tap, codec):
    client = new_client(nodes.sub, codec, url=tap.ws_url)
    try:
        await connected(client)
        ch = unique_channel("chat:deflate-")
        sub = new_sub(client, ch)
        await subscribed(sub)

        sent = publications()
        for i, data in enumerate(sent):
            res = await publish(nodes.pub, ch, data)
            assert res.get("offset") == i + 1, res
        pubs = await sub.rec.wait_count("publication", len(sent))
        assert [p.pub.offset for p in pubs] == list(range(1, len(sent) + 1))
        assert [codec.decode(p.pub.data) for p in pubs] == sent

        # The SDK's own connection negotiated it, not only the tap's view.
        assert client_extensions(client) == ["permessage-deflate"]
        assert len(tap.conns) == 1, "one connection, no reconnect"
        wire, plain = check_wire(tap.conns[0], sent, deflate=True)
        assert wire * 3 <= plain

        # websockets deflates what it sends too: the server read the connect
        # and subscribe commands compressed, each standing alone.
        commands = tap.conns[0].from_client.messages
        assert len(commands) >= 2
        for m in commands[:2]:
            assert m.compressed and m.error is None, m
    finally:
        await client.disconnect()


async def test_sdk_with_and_without_compression_on_one_channel(nodes, codec):
    """A compressed connection and a plain one (its offer taken out of the
    handshake by the tap) subscribed to one channel both get every publication
    intact, the plain one with nothing compressed."""
    taps = [
        await WireTap(nodes.sub.port).start(),
        await WireTap(nodes.sub.port, strip_offers=True).start(),
    ]
    clients = [new_client(nodes.sub, codec, url=t.ws_url) for t in taps]
    try:
        ch = unique_channel("chat:mixed-")
        subs = []
        for c in clients:
            await connected(c)
            s = new_sub(c, ch)
            await subscribed(s)
            subs.append(s)

        sent = publications()
        for data in sent:
            await publish(nodes.pub, ch, data)
        for s in subs:
            pubs = await s.rec.wait_count("publication", len(sent))
            assert [codec.decode(p.pub.data) for p in pubs] == sent
        assert client_extensions(clients[0]) == ["permessage-deflate"]
        assert client_extensions(clients[1]) == []
        check_wire(taps[0].conns[0], sent, deflate=True)
        check_wire(taps[1].conns[0], sent, deflate=False)
    finally:
        for c in clients:
            await c.disconnect()
        await asyncio.gather(*(t.close() for t in taps))
