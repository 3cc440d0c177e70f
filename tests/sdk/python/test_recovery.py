from gyre_sdk import connected, new_sub, publish, subscribed, unique_channel


async def test_recovers_missed_publications_in_order_once(server, codec, make_client):
    client = make_client()
    await connected(client)
    ch = unique_channel("chat:rec-")
    sub = new_sub(client, ch)
    first = await subscribed(sub)
    assert first.recoverable, f"subscribe to a history channel: {first!r}"

    # One publication seen live, so the position the client recovers from is not zero.
    live = await publish(server, ch, {"n": 0})
    await sub.rec.wait("publication", match=lambda c: c.pub.offset == live["offset"])

    since = client.rec.mark()
    await client.disconnect()
    await client.rec.wait("disconnected", since=since)

    missed = []
    for n in (1, 2, 3):
        res = await publish(server, ch, {"n": n})
        assert res["epoch"] == live["epoch"], "the epoch changed between publishes"
        missed.append(res["offset"])
    assert missed == [live["offset"] + i for i in (1, 2, 3)], "offsets from the API"

    since = sub.rec.mark()
    await client.connect()
    ctx = await sub.rec.wait("subscribed", since=since)
    assert ctx.was_recovering, f"subscribed event: {ctx!r}"
    assert ctx.recovered, f"subscribed event: {ctx!r}"

    # A marker published after the recovered ones shows that nothing more was
    # queued before it.
    await sub.rec.wait_count("publication", 3, since=since)
    marker = await publish(server, ch, {"n": "marker"})
    await sub.rec.wait("publication", since=since, match=lambda c: c.pub.offset == marker["offset"])

    got = [c.pub for c in sub.rec.all("publication", since)]
    assert [p.offset for p in got] == missed + [marker["offset"]], "offsets after reconnect"
    assert [codec.decode(p.data) for p in got[:3]] == [{"n": 1}, {"n": 2}, {"n": 3}]
