from centrifuge import ClientState

from gyre_sdk import connected
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
