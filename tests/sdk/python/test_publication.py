from gyre_sdk import connected, new_sub, publish, subscribed, unique_channel

# A payload that exercises what JSON can carry: nesting, every scalar type,
# non-ASCII text and characters JSON must escape.
PAYLOAD = {
    "text": "hello",
    "n": 42,
    "f": -1.5,
    "ok": True,
    "nothing": None,
    "list": [1, "two", False, {"three": 3}],
    "nested": {"unicode": "héllo ✓ 🚀 中文", "escapes": 'quote " backslash \\ newline \n tab \t'},
}


async def test_receives_api_publication_with_data_intact(server, codec, make_client):
    client = make_client()
    await connected(client)
    ch = unique_channel("news-")
    sub = new_sub(client, ch)
    await subscribed(sub)

    await publish(server, ch, PAYLOAD)
    ctx = await sub.rec.wait("publication")
    assert codec.decode(ctx.pub.data) == PAYLOAD


async def test_subscriber_publishes_where_allowed(codec, make_client):
    client = make_client(user="carol")
    conn = await connected(client)
    ch = unique_channel("chat:pub-")
    sub = new_sub(client, ch)
    await subscribed(sub)

    await sub.publish(codec.encode({"from": "client"}))
    ctx = await sub.rec.wait("publication")
    assert codec.decode(ctx.pub.data) == {"from": "client"}
    assert ctx.pub.info is not None, "publication from a client carries its info"
    assert (ctx.pub.info.user, ctx.pub.info.client) == ("carol", conn.client)
    assert ctx.pub.offset > 0, "a publication in a history channel has an offset"
