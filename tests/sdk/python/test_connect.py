import time

from centrifuge import ClientState

from gyre_sdk import connected, new_client
from gyre_server import sign_token


async def test_connects_with_valid_token(make_client):
    client = make_client(user="alice")
    ctx = await connected(client)
    assert isinstance(ctx.client, str) and ctx.client, f"client id missing: {ctx!r}"
    assert client.state == ClientState.CONNECTED


async def test_wrong_key_is_disconnected_with_3500_and_stays_away(make_client):
    client = make_client(token=sign_token({"sub": "alice"}, secret="not-the-server-secret-0123456789abcdef"))
    await client.connect()
    ctx = await client.rec.wait("disconnected")
    assert ctx.code == 3500, f"disconnect: {ctx!r}"
    # The SDK goes back to "connecting" for codes it retries; "disconnected" with
    # the client in that state means it decided not to reconnect.
    assert client.state == ClientState.DISCONNECTED
    assert client.rec.all("connected") == [], "a client with a bad token got connected"


async def test_refresh_with_an_expired_token_reconnects_with_a_fresh_one(server, codec):
    # The first token fetched is already expired, the next ones are good.
    fetched = []

    async def get_token():
        fetched.append(1)
        if len(fetched) == 1:
            return sign_token({"sub": "alice", "exp": int(time.time()) - 60})
        return sign_token({"sub": "alice"})

    client = new_client(
        server, codec, token=sign_token({"sub": "alice", "exp": int(time.time()) + 2}), get_token=get_token
    )
    try:
        await connected(client)
        since = client.rec.mark()
        # Refreshing with the expired token closes the connection with 3005, which
        # the SDK retries; connect then answers 109 and the SDK fetches a good token.
        ctx = await client.rec.wait("connecting", since=since, timeout=8)
        assert ctx.code == 3005, f"connecting: {ctx!r}"
        await client.rec.wait("connected", since=since, timeout=8)
        assert client.state == ClientState.CONNECTED
        assert client.rec.all("disconnected", since=since) == [], "the client gave up"
    finally:
        await client.disconnect()
