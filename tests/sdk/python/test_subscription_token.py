"""Faults of a subscription token and what the server answers (docs/tokens.md):
a token that does not verify is refused with 103 and the connection stays; a
well-signed token for another channel or user closes it with 3500."""

import pytest
from centrifuge import ClientState

from gyre_sdk import connected, new_sub, publish, subscribe_fails, subscribed, unique_channel
from gyre_server import sign_token


async def test_private_channel_with_its_token(server, codec, make_client):
    client = make_client(user="dave")
    await connected(client)
    ch = unique_channel("private:tok-")
    sub = new_sub(client, ch, token=sign_token({"sub": "dave", "channel": ch}))
    await subscribed(sub)
    await publish(server, ch, {"secret": True})
    ctx = await sub.rec.wait("publication")
    assert codec.decode(ctx.pub.data) == {"secret": True}


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(
            lambda ch: sign_token(
                {"sub": "dave", "channel": ch}, secret="not-the-server-secret-0123456789abcdef"
            ),
            id="badly signed",
        ),
        pytest.param(lambda ch: "not-a-jwt", id="malformed"),
    ],
)
async def test_invalid_token_unsubscribes_with_103_and_keeps_the_connection(make_client, token):
    client = make_client(user="dave")
    await connected(client)
    ch = unique_channel("private:tok-")
    ctx = await subscribe_fails(new_sub(client, ch, token=token(ch)))
    assert ctx.code == 103, f"unsubscribed: {ctx!r}"
    assert client.state == ClientState.CONNECTED
    # The connection serves the next subscription.
    nxt = unique_channel("private:tok-")
    await subscribed(new_sub(client, nxt, token=sign_token({"sub": "dave", "channel": nxt})))
    assert client.rec.all("disconnected") == [], "the client was disconnected"


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(lambda ch: sign_token({"sub": "dave", "channel": ch + "-other"}), id="another channel"),
        pytest.param(lambda ch: sign_token({"sub": "mallory", "channel": ch}), id="another user"),
    ],
)
async def test_misused_token_disconnects_with_3500_and_stays_away(make_client, token):
    client = make_client(user="dave")
    await connected(client)
    ch = unique_channel("private:tok-")
    since = client.rec.mark()
    await new_sub(client, ch, token=token(ch)).subscribe()
    ctx = await client.rec.wait("disconnected", since=since)
    assert ctx.code == 3500, f"disconnect: {ctx!r}"
    # The SDK goes back to "connecting" for codes it retries; "disconnected" with
    # the client in that state means it decided not to reconnect.
    assert client.state == ClientState.DISCONNECTED
    assert client.rec.all("connecting", since=since) == [], "the client reconnected"
