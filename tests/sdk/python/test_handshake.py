"""The WebSocket handshake as PyPI websockets makes it, without the SDK.

centrifuge-python 0.3.0 through 0.6.0 pass ``subprotocols=[]`` to
``websockets.connect`` for JSON (``["centrifuge-protobuf"]`` for protobuf), and
every websockets release they allow (11.0.3 to 17.x) sends a
``Sec-WebSocket-Protocol`` header whenever that list is not None, joined with
", ": for an empty list, a header with an empty value. centrifuge-python 0.7.0
passes None for JSON and sends no header, so the SDK pinned in
requirements.txt no longer shows it; these tests call websockets (the pinned
17.4) directly to keep older SDKs working. The server must take the empty
header as "no subprotocol offered", answer 101 without naming one, and pick
the format from the query or default to JSON.
"""

import json

import pytest
from centrifuge.protocol.client_pb2 import Command, Reply
from websockets.asyncio.client import connect

from gyre_sdk import WAIT
from gyre_server import sign_token


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _first_message(frame):
    """The first varint-delimited message of a protobuf frame."""
    n = shift = i = 0
    while True:
        b = frame[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return frame[i : i + n]


async def _open(server, query=""):
    conn = await connect(server.ws_url + query, subprotocols=[], open_timeout=WAIT)
    # What this test is about: the request carried the header, empty.
    assert conn.request.headers.get_all("Sec-WebSocket-Protocol") == [""]
    assert "Sec-WebSocket-Protocol" not in conn.response.headers
    assert conn.subprotocol is None
    return conn


async def test_empty_subprotocol_list_connects_with_json(server):
    conn = await _open(server)
    try:
        token = sign_token({"sub": "alice"})
        await conn.send(json.dumps({"id": 1, "connect": {"token": token, "name": "py"}}))
        frame = await conn.recv()
        assert isinstance(frame, str), f"got a binary frame on a JSON connection: {frame!r}"
        reply = json.loads(frame.split("\n")[0])
        assert reply.get("id") == 1 and "error" not in reply, f"connect reply: {reply}"
        assert reply["connect"].get("client"), f"no client id: {reply}"
    finally:
        await conn.close()


@pytest.mark.parametrize("query", ["?format=protobuf", "?cf_protocol=protobuf"])
async def test_empty_subprotocol_list_with_protobuf_query(server, query):
    conn = await _open(server, query)
    try:
        cmd = Command(id=1)
        cmd.connect.token = sign_token({"sub": "alice"})
        body = cmd.SerializeToString()
        await conn.send(_varint(len(body)) + body)
        frame = await conn.recv()
        assert isinstance(frame, bytes), f"got a text frame on a protobuf connection: {frame!r}"
        reply = Reply.FromString(_first_message(frame))
        assert reply.id == 1 and not reply.HasField("error"), f"connect reply: {reply}"
        assert reply.connect.client, f"no client id: {reply}"
    finally:
        await conn.close()
