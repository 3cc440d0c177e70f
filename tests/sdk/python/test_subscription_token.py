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


async def test_token_for_another_channel_refused(make_client):
    client = make_client(user="dave")
    await connected(client)
    ch = unique_channel("private:tok-")
    token = sign_token({"sub": "dave", "channel": ch + "-other"})
    ctx = await subscribe_fails(new_sub(client, ch, token=token))
    assert ctx.code == 103, f"unsubscribed: {ctx!r}"


async def test_token_for_another_user_refused(make_client):
    client = make_client(user="dave")
    await connected(client)
    ch = unique_channel("private:tok-")
    token = sign_token({"sub": "mallory", "channel": ch})
    ctx = await subscribe_fails(new_sub(client, ch, token=token))
    assert ctx.code == 103, f"unsubscribed: {ctx!r}"
