import pytest_asyncio

from gyre_sdk import connected, new_sub, publish, subscribed, unique_channel
from relay import Relay


async def subscribe_with_live(server, client):
    """Subscribes to a fresh history channel and sees one publication live, so
    that the position the client later recovers from is not zero."""
    ch = unique_channel("chat:rec-")
    sub = new_sub(client, ch)
    first = await subscribed(sub)
    assert first.recoverable, f"subscribe to a history channel: {first!r}"
    live = await publish(server, ch, {"n": 0})
    await sub.rec.wait("publication", match=lambda c: c.pub.offset == live["offset"])
    return ch, sub, live


async def publish_missed(server, ch, live):
    missed = []
    for n in (1, 2, 3):
        res = await publish(server, ch, {"n": n})
        assert res["epoch"] == live["epoch"], "the epoch changed between publishes"
        missed.append(res["offset"])
    assert missed == [live["offset"] + i for i in (1, 2, 3)], "offsets from the API"
    return missed


async def expect_recovered(server, codec, ch, sub, since, missed):
    """The resubscription after since is recovered and delivers the missed
    publications once each, in offset order."""
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


async def test_recovers_missed_publications_in_order_once(server, codec, make_client):
    client = make_client()
    await connected(client)
    ch, sub, live = await subscribe_with_live(server, client)

    since = client.rec.mark()
    await client.disconnect()
    await client.rec.wait("disconnected", since=since)
    missed = await publish_missed(server, ch, live)

    since = sub.rec.mark()
    await client.connect()
    await expect_recovered(server, codec, ch, sub, since, missed)


@pytest_asyncio.fixture
async def relay(server):
    r = await Relay(server.port).start()
    yield r
    await r.close()


async def test_recovers_after_network_drop(server, codec, make_client, relay):
    client = make_client(url=relay.ws_url)
    await connected(client)
    ch, sub, live = await subscribe_with_live(server, client)

    since = client.rec.mark()
    relay.cut()
    await client.rec.wait("connecting", since=since, what="connecting after the drop")
    missed = await publish_missed(server, ch, live)

    since = sub.rec.mark()
    relay.restore()
    await expect_recovered(server, codec, ch, sub, since, missed)
