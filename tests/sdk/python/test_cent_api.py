"""Every method of the server HTTP API through PyPI cent, with both its sync
Client and its AsyncClient, against the real gyre binary.

A centrifuge-python connection observes what the calls do to users'
connections: server-side subscribe and unsubscribe, disconnect and refresh.
"""

import asyncio
import base64
import json
import time

import pytest
import pytest_asyncio
from cent import (
    BatchRequest,
    BroadcastRequest,
    ChannelsRequest,
    Disconnect,
    DisconnectRequest,
    HistoryRemoveRequest,
    HistoryRequest,
    InfoRequest,
    PresenceRequest,
    PresenceStatsRequest,
    PublishRequest,
    RefreshRequest,
    StreamPosition,
    SubscribeRequest,
    UnsubscribeRequest,
)
from cent.exceptions import CentApiResponseError, CentUnauthorizedError

from gyre_cent import open_api
from gyre_sdk import (
    CODECS,
    WAIT,
    ServerSideEvents,
    connected,
    new_client,
    new_sub,
    subscribed,
    unique_channel,
)
from gyre_server import GyreServer, base_config

JSON = CODECS[0]


def cent_config(port):
    """base_config with a short grace period after expiry, so that a refresh
    with expire_at closes the connection within the test's bounds."""
    cfg = base_config(port)
    cfg["client"]["expired_close_delay"] = "100ms"
    return cfg


@pytest.fixture(scope="module")
def server():
    s = GyreServer(cent_config)
    yield s
    s.stop()


@pytest_asyncio.fixture
async def observe(server):
    """Connects JSON clients that also record server-side subscription events,
    and disconnects them at the test's end."""
    made = []

    async def make(user, srv=None):
        client = new_client(srv or server, JSON, user=user, events=ServerSideEvents)
        made.append(client)
        client.user = user
        client.conn = await connected(client)
        return client

    yield make
    for client in made:
        await client.disconnect()


async def eventually(check, what, timeout=WAIT):
    """Polls an async check until it returns true; the server applies some
    effects (presence after a close) after the client has seen the close."""
    deadline = time.monotonic() + timeout
    while True:
        last = await check()
        if last:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still not so after {timeout}s")
        await asyncio.sleep(0.05)


def unique_user():
    return unique_channel("user-")


async def test_publish_data_and_tags(api, observe):
    client = await observe(unique_user())
    ch = unique_channel("chat:pub-")
    sub = new_sub(client, ch)
    await subscribed(sub)

    res = await api.publish(
        PublishRequest(channel=ch, data={"text": "héllo ✓"}, tags={"kind": "greeting", "n": "1"})
    )
    assert res.offset == 1, f"{res!r}"
    assert res.epoch, f"a history channel has an epoch: {res!r}"

    ctx = await sub.rec.wait("publication")
    assert ctx.pub.data == {"text": "héllo ✓"}
    assert ctx.pub.tags == {"kind": "greeting", "n": "1"}
    assert ctx.pub.offset == res.offset


async def test_publish_b64data(api, observe):
    client = await observe(unique_user())
    ch = unique_channel("chat:b64-")
    sub = new_sub(client, ch)
    await subscribed(sub)

    raw = json.dumps({"binary": "payload"}).encode()
    res = await api.publish(PublishRequest(channel=ch, data=None, b64data=base64.b64encode(raw).decode()))
    ctx = await sub.rec.wait("publication")
    # JSON bytes published as base64 reach a JSON connection as that JSON.
    assert (ctx.pub.data, ctx.pub.offset) == ({"binary": "payload"}, res.offset)


async def test_publish_idempotency_key(api, observe):
    client = await observe(unique_user())
    ch = unique_channel("chat:idem-")
    sub = new_sub(client, ch)
    await subscribed(sub)

    first = await api.publish(PublishRequest(channel=ch, data={"n": 1}, idempotency_key="k1"))
    again = await api.publish(PublishRequest(channel=ch, data={"n": 2}, idempotency_key="k1"))
    assert (again.offset, again.epoch) == (first.offset, first.epoch), "a repeated key returns the first result"
    other = await api.publish(PublishRequest(channel=ch, data={"n": 3}, idempotency_key="k2"))
    assert other.offset == first.offset + 1

    # The subscriber sees the later key's publication only after the first one,
    # and never the repeat.
    await sub.rec.wait("publication", match=lambda c: c.pub.offset == other.offset)
    assert [c.pub.data for c in sub.rec.all("publication")] == [{"n": 1}, {"n": 3}]
    hist = await api.history(HistoryRequest(channel=ch, limit=-1))
    assert [p.data for p in hist.publications] == [{"n": 1}, {"n": 3}]


async def test_publish_skip_history(api, observe):
    client = await observe(unique_user())
    ch = unique_channel("chat:skip-")
    sub = new_sub(client, ch)
    await subscribed(sub)

    kept = await api.publish(PublishRequest(channel=ch, data={"n": 1}))
    await api.publish(PublishRequest(channel=ch, data={"n": 2}, skip_history=True))

    pubs = await sub.rec.wait_count("publication", 2)
    assert [c.pub.data for c in pubs] == [{"n": 1}, {"n": 2}], "subscribers get both"
    hist = await api.history(HistoryRequest(channel=ch, limit=-1))
    assert [p.data for p in hist.publications] == [{"n": 1}], "history keeps only the first"
    assert (hist.offset, hist.epoch) == (kept.offset, kept.epoch)


async def test_broadcast(api, observe):
    client = await observe(unique_user())
    chs = [unique_channel("chat:bc-"), unique_channel("chat:bc-")]
    subs = [new_sub(client, ch) for ch in chs]
    for sub in subs:
        await subscribed(sub)

    res = await api.broadcast(
        BroadcastRequest(channels=[*chs, "nope:x"], data={"to": "all"}, tags={"k": "v"})
    )
    assert len(res.responses) == 3, f"{res!r}"
    for r in res.responses[:2]:
        assert r.error is None and r.result.offset == 1, f"{res!r}"
    assert res.responses[2].error is not None and res.responses[2].error.code == 102, f"{res!r}"

    for sub in subs:
        ctx = await sub.rec.wait("publication")
        assert (ctx.pub.data, ctx.pub.tags) == ({"to": "all"}, {"k": "v"})


async def test_subscribe_and_unsubscribe_user(api, observe):
    user = unique_user()
    client = await observe(user)
    ch = unique_channel("chat:srv-")

    since = client.rec.mark()
    await api.subscribe(SubscribeRequest(user=user, channel=ch))
    ctx = await client.rec.wait("subscribed", since=since, match=lambda c: c.channel == ch)
    assert ctx.recoverable, f"chat keeps history and forces recovery: {ctx!r}"

    res = await api.publish(PublishRequest(channel=ch, data={"n": 1}))
    pub = await client.rec.wait("publication", since=since, match=lambda c: c.channel == ch)
    assert (pub.pub.data, pub.pub.offset) == ({"n": 1}, res.offset)
    presence = await api.presence(PresenceRequest(channel=ch))
    assert list(presence.presence) == [client.conn.client], f"{presence!r}"

    await api.unsubscribe(UnsubscribeRequest(user=user, channel=ch))
    await client.rec.wait("unsubscribed", since=since, match=lambda c: c.channel == ch)

    async def gone():
        stats = await api.presence_stats(PresenceStatsRequest(channel=ch))
        return stats.num_clients == 0

    await eventually(gone, f"presence of {ch} empty after unsubscribe")


async def test_subscribe_one_connection_of_user(api, observe):
    user = unique_user()
    one = await observe(user)
    other = await observe(user)
    ch = unique_channel("chat:one-")

    since = one.rec.mark()
    await api.subscribe(SubscribeRequest(user=user, channel=ch, client=one.conn.client))
    await one.rec.wait("subscribed", since=since, match=lambda c: c.channel == ch)
    presence = await api.presence(PresenceRequest(channel=ch))
    assert list(presence.presence) == [one.conn.client], f"only the chosen connection: {presence!r}"
    assert presence.presence[one.conn.client].user == user
    assert other.rec.all("subscribed") == []


async def test_disconnect_user(api, observe):
    user = unique_user()
    keep = await observe(user)
    drop = await observe(user)

    since = drop.rec.mark()
    await api.disconnect(
        DisconnectRequest(
            user=user,
            whitelist=[keep.conn.client],
            disconnect=Disconnect(code=4501, reason="bye"),
        )
    )
    ctx = await drop.rec.wait("disconnected", since=since)
    assert (ctx.code, ctx.reason) == (4501, "bye")
    assert keep.rec.all("disconnected") == [] and keep.rec.all("connecting", since=1) == []

    # Without a disconnect object the close is 3503, after which SDKs stay away.
    since = keep.rec.mark()
    await api.disconnect(DisconnectRequest(user=user))
    ctx = await keep.rec.wait("disconnected", since=since)
    assert (ctx.code, ctx.reason) == (3503, "force disconnect")


async def test_refresh_user(api, observe):
    user = unique_user()
    client = await observe(user)

    # expired closes at once with 3005; the SDK reconnects with its token.
    since = client.rec.mark()
    await api.refresh(RefreshRequest(user=user, expired=True))
    ctx = await client.rec.wait("connecting", since=since)
    assert (ctx.code, ctx.reason) == (3005, "expired")
    await client.rec.wait("connected", since=since)

    # expire_at in a second closes with 3005 once that second and the
    # configured grace period have passed.
    since = client.rec.mark()
    await api.refresh(RefreshRequest(user=user, expire_at=int(time.time()) + 1))
    ctx = await client.rec.wait("connecting", since=since, timeout=WAIT + 2)
    assert (ctx.code, ctx.reason) == (3005, "expired")
    await client.rec.wait("connected", since=since)


async def test_refresh_far_expiry_keeps_connection(api, observe):
    user = unique_user()
    client = await observe(user)
    ch = unique_channel("chat:far-")
    sub = new_sub(client, ch)
    await subscribed(sub)

    since = client.rec.mark()
    await api.refresh(RefreshRequest(user=user, expire_at=int(time.time()) + 3600))
    # A publication sent after the refresh arrives on the same connection.
    await api.publish(PublishRequest(channel=ch, data={"after": "refresh"}))
    ctx = await sub.rec.wait("publication")
    assert ctx.pub.data == {"after": "refresh"}
    assert client.rec.all("connecting", since=since) == [], "the connection stayed"


async def test_presence_and_stats(api, observe):
    alice, bob = await observe(unique_user()), await observe(unique_user())
    ch = unique_channel("chat:pres-")
    for c in (alice, bob):
        await subscribed(new_sub(c, ch))

    presence = await api.presence(PresenceRequest(channel=ch))
    got = {cid: info.user for cid, info in presence.presence.items()}
    want = {alice.conn.client: alice.user, bob.conn.client: bob.user}
    assert got == want, f"{presence!r}"
    for cid, info in presence.presence.items():
        assert info.client == cid

    stats = await api.presence_stats(PresenceStatsRequest(channel=ch))
    assert (stats.num_clients, stats.num_users) == (2, 2), f"{stats!r}"


async def test_history_limit_since_reverse(api):
    ch = unique_channel("chat:hist-")
    results = [await api.publish(PublishRequest(channel=ch, data={"n": n})) for n in range(1, 6)]
    epoch = results[0].epoch
    assert [r.offset for r in results] == [1, 2, 3, 4, 5]
    assert {r.epoch for r in results} == {epoch}

    def pos(offset):
        return StreamPosition(offset=offset, epoch=epoch)

    cases = [
        ("top only", dict(), []),
        ("limit", dict(limit=2), [1, 2]),
        ("all", dict(limit=-1), [1, 2, 3, 4, 5]),
        ("since", dict(limit=-1, since=pos(2)), [3, 4, 5]),
        ("since with limit", dict(limit=2, since=pos(2)), [3, 4]),
        ("reverse", dict(limit=2, reverse=True), [5, 4]),
        ("since reverse", dict(limit=-1, since=pos(4), reverse=True), [3, 2, 1]),
    ]
    for name, kw, want in cases:
        hist = await api.history(HistoryRequest(channel=ch, **kw))
        assert [p.offset for p in hist.publications] == want, name
        assert [p.data for p in hist.publications] == [{"n": n} for n in want], name
        assert (hist.offset, hist.epoch) == (5, epoch), name

    with pytest.raises(CentApiResponseError) as err:
        await api.history(HistoryRequest(channel=ch, limit=-1, since=StreamPosition(offset=1, epoch="other")))
    assert err.value.code == 112


async def test_history_remove(api):
    ch = unique_channel("chat:rm-")
    for n in range(3):
        last = await api.publish(PublishRequest(channel=ch, data={"n": n}))
    await api.history_remove(HistoryRemoveRequest(channel=ch))

    hist = await api.history(HistoryRequest(channel=ch, limit=-1))
    assert hist.publications == []
    assert (hist.offset, hist.epoch) == (last.offset, last.epoch), "the stream position stays"
    after = await api.publish(PublishRequest(channel=ch, data={"n": "after"}))
    assert (after.offset, after.epoch) == (last.offset + 1, last.epoch)


async def test_channels(api, observe):
    one, two = await observe(unique_user()), await observe(unique_user())
    prefix = unique_channel("chat:chn-")
    a, b = prefix + "-a", prefix + "-b"
    for c, ch in ((one, a), (two, a), (one, b)):
        await subscribed(new_sub(c, ch))

    res = await api.channels(ChannelsRequest(pattern=prefix + "*"))
    assert {ch: info.num_clients for ch, info in res.channels.items()} == {a: 2, b: 1}
    everything = await api.channels(ChannelsRequest())
    assert {a, b} <= set(everything.channels)


async def test_empty_results_decode(api):
    # cent requires the maps and lists of these results: an empty one must be
    # sent, not left out as a zero value.
    ch = unique_channel("chat:empty-")
    chans = await api.channels(ChannelsRequest(pattern=ch + "*"))
    assert chans.channels == {}
    presence = await api.presence(PresenceRequest(channel=ch))
    assert presence.presence == {}
    stats = await api.presence_stats(PresenceStatsRequest(channel=ch))
    assert (stats.num_clients, stats.num_users) == (0, 0)
    hist = await api.history(HistoryRequest(channel=ch, limit=-1))
    assert (hist.publications, hist.offset) == ([], 0)


async def test_info(flavour, observe):
    # A server of its own, so that the counts are exactly this test's.
    srv = GyreServer(cent_config)
    own = open_api(flavour, srv)
    try:
        one = await observe(unique_user(), srv)
        two = await observe(unique_user(), srv)
        await subscribed(new_sub(one, "chat:info"))
        await subscribed(new_sub(two, "chat:info"))
        await subscribed(new_sub(two, "chat:info2"))

        res = await own.info(InfoRequest())
        assert len(res.nodes) == 1, f"{res!r}"
        node = res.nodes[0]
        assert node.uid and node.name and node.version, f"{node!r}"
        assert (node.num_clients, node.num_users, node.num_channels, node.num_subs) == (2, 2, 2, 3), f"{node!r}"
    finally:
        await own.close()
        srv.stop()


async def test_batch_sequential(api, observe):
    client = await observe(unique_user())
    ch = unique_channel("chat:batch-")
    sub = new_sub(client, ch)
    await subscribed(sub)

    res = await api.batch(
        BatchRequest(
            requests=[
                PublishRequest(channel=ch, data={"n": 1}),
                PublishRequest(channel=ch, data={"n": 2}),
                PublishRequest(channel=ch, data={"n": 3}),
                HistoryRequest(channel=ch, limit=-1),
                PresenceStatsRequest(channel=ch),
            ]
        )
    )
    assert len(res.replies) == 5, f"{res!r}"
    assert [r.offset for r in res.replies[:3]] == [1, 2, 3]
    # In order: the history command sees every publish before it.
    assert [p.data for p in res.replies[3].publications] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert res.replies[4].num_clients == 1

    pubs = await sub.rec.wait_count("publication", 3)
    assert [c.pub.offset for c in pubs] == [1, 2, 3]


async def test_batch_parallel(api):
    chs = [unique_channel(f"chat:par{i}-") for i in range(6)]
    res = await api.batch(
        BatchRequest(
            requests=[PublishRequest(channel=ch, data={"ch": ch}) for ch in chs] + [InfoRequest()],
            parallel=True,
        )
    )
    assert len(res.replies) == len(chs) + 1, f"{res!r}"
    assert len(res.replies[-1].nodes) == 1, "the info reply comes last, as its command"
    # Each reply belongs to its own command: its epoch is its channel's.
    for ch, reply in zip(chs, res.replies):
        hist = await api.history(HistoryRequest(channel=ch, limit=-1))
        assert [p.data for p in hist.publications] == [{"ch": ch}]
        assert (reply.offset, reply.epoch) == (1, hist.epoch), ch


@pytest.mark.parametrize(
    "request_, code",
    [
        pytest.param(PublishRequest(channel="nope:x", data={}), 102, id="publish-unknown-namespace"),
        pytest.param(HistoryRequest(channel="nope:x"), 102, id="history-unknown-namespace"),
        pytest.param(HistoryRequest(channel="private:x"), 108, id="history-not-kept"),
        pytest.param(PresenceRequest(channel="private:x"), 108, id="presence-not-kept"),
    ],
)
async def test_api_errors(api, request_, code):
    call = getattr(api, request_.__api_method__)
    with pytest.raises(CentApiResponseError) as err:
        await call(request_)
    assert err.value.code == code, f"{err.value!r}"


async def test_wrong_api_key(flavour, server):
    wrong = open_api(flavour, server, key="not-the-key")
    try:
        with pytest.raises(CentUnauthorizedError):
            await wrong.publish(PublishRequest(channel="chat:x", data={}))
        with pytest.raises(CentUnauthorizedError):
            await wrong.info(InfoRequest())
    finally:
        await wrong.close()
