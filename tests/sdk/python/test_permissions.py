import pytest
from centrifuge import ClientState, ReplyError

from gyre_sdk import connected, new_sub, subscribe_fails, subscribed, unique_channel


async def test_private_namespace_refused_with_103(make_client):
    client = make_client()
    await connected(client)
    ctx = await subscribe_fails(new_sub(client, unique_channel("private:")))
    assert ctx.code == 103, f"unsubscribed: {ctx!r}"
    assert client.state == ClientState.CONNECTED, "a refused subscription must not cost the connection"


async def test_publish_not_allowed_refused_with_103(codec, make_client):
    client = make_client()
    await connected(client)
    # Subscribing is allowed without a namespace, publishing is not.
    sub = new_sub(client, unique_channel("open-"))
    await subscribed(sub)
    with pytest.raises(ReplyError) as err:
        await sub.publish(codec.encode({"x": 1}))
    assert err.value.code == 103, f"publish error: {err.value!r}"
    # In "chat" publishing needs a subscription first.
    with pytest.raises(ReplyError) as err:
        await client.publish(unique_channel("chat:nosub-"), codec.encode({"x": 1}))
    assert err.value.code == 103, f"publish error: {err.value!r}"


async def test_unknown_namespace_refused_with_102(make_client):
    client = make_client()
    await connected(client)
    ctx = await subscribe_fails(new_sub(client, "nope:x"))
    assert ctx.code == 102, f"unsubscribed: {ctx!r}"
