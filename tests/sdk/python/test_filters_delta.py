"""Tags filters and fossil delta compression through centrifuge-python.

The SDK builds filters with its Filter helpers and decodes fossil deltas itself;
it keeps no delta statistics, so the delta flag of each publication is checked.
"""

import asyncio
import json
import urllib.request

import pytest

from centrifuge import DeltaType, Filter

from gyre_sdk import connected, new_sub, subscribe_fails, subscribed, unique_channel
from gyre_server import API_KEY, GyreServer, base_config, sign_token


def config(port):
    """base_config plus: "feed" (client filters), "secret" (subscription token
    needed, whose claims may add a filter), "prices" (fossil deltas on
    request) and "ticks" (every publication a delta candidate)."""
    cfg = base_config(port)
    deltas = {
        "allow_subscribe_for_client": True,
        "allowed_delta_types": ["fossil"],
        "history_size": 100,
        "history_ttl": "300s",
    }
    cfg["channel"]["namespaces"] += [
        {"name": "feed", "allow_subscribe_for_client": True, "allow_tags_filter": True},
        {"name": "secret", "allow_tags_filter": True},
        {"name": "prices", **deltas},
        {"name": "ticks", **deltas, "delta_publish": True},
    ]
    return cfg


@pytest.fixture(scope="module")
def server():
    s = GyreServer(config)
    yield s
    s.stop()


def publish_raw(server, body):
    """Posts a publish whose JSON body is given as text, so that the payload's
    bytes (UTF-8, not \\u escapes) are exactly the ones chosen here."""
    req = urllib.request.Request(
        f"{server.http_url}/api/publish",
        data=body.encode(),
        method="POST",
        headers={"Content-Type": "application/json", "X-API-Key": API_KEY},
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        reply = json.loads(r.read())
    assert "error" not in reply, f"publish: {reply}"
    return reply["result"]


async def publish_tagged(server, ch, i, tags):
    await asyncio.to_thread(server.api, "publish", {"channel": ch, "data": {"i": i}, "tags": tags})


# (kind == "trade" && price >= 10.5 && price < 100) || (kind in ("quote", "halt") && !(venue == "dark"))
TRADE_FILTER = Filter.any(
    Filter.all(Filter.eq("kind", "trade"), Filter.gte("price", "10.5"), Filter.lt("price", "100")),
    Filter.all(Filter.is_in("kind", ["quote", "halt"]), Filter.negate(Filter.eq("venue", "dark"))),
)

# Tags and whether TRADE_FILTER lets them through; prices compare as decimals.
TRADE_MIX = [
    ({"kind": "trade", "price": "10.5"}, True),
    ({"kind": "trade", "price": "10.500"}, True),
    ({"kind": "trade", "price": "1.05e1"}, True),
    ({"kind": "trade", "price": "10.49"}, False),
    ({"kind": "trade", "price": "99.9"}, True),
    ({"kind": "trade", "price": "100.0"}, False),
    ({"kind": "trade", "price": "n/a"}, False),
    ({"kind": "trade"}, False),
    ({"kind": "quote", "venue": "lit"}, True),
    ({"kind": "quote", "venue": "dark"}, False),
    ({"kind": "halt"}, True),
    ({}, False),
]

REGION_MIX = [{"region": "us"}, {"region": "eu", "plan": "free"}, {"region": "asia"}, {"region": "eu", "plan": "pro"}, {}]


async def received_until(codec, sub, marker):
    """The i of every publication received, once the marker has arrived: it
    was published last, so everything the filter passed came before it."""
    await sub.rec.wait("publication", match=lambda c: codec.decode(c.pub.data)["i"] == marker, what="marker")
    return [codec.decode(c.pub.data)["i"] for c in sub.rec.all("publication")]


async def test_tags_filter_delivers_exactly_the_matching_publications(server, codec, make_client):
    client = make_client()
    await connected(client)
    ch = unique_channel("feed:tf-")
    sub = new_sub(client, ch, tags_filter=TRADE_FILTER)
    await subscribed(sub)
    for i, (tags, _) in enumerate(TRADE_MIX):
        await publish_tagged(server, ch, i, tags)
    marker = len(TRADE_MIX)
    await publish_tagged(server, ch, marker, {"kind": "halt"})

    got = await received_until(codec, sub, marker)
    assert got == [i for i, (_, match) in enumerate(TRADE_MIX) if match] + [marker]
    assert sub.rec.all("publication")[0].pub.tags == TRADE_MIX[0][0]


async def test_tags_filter_refused_where_not_allowed(make_client):
    client = make_client()
    await connected(client)
    sub = new_sub(client, unique_channel("chat:tf-"), tags_filter=TRADE_FILTER)
    ctx = await subscribe_fails(sub)
    assert ctx.code == 107, f"unsubscribed: {ctx!r}"


@pytest.mark.parametrize(
    "claims, client_filter, want",
    [
        ({"filter": 'region == "eu"'}, None, lambda t: t.get("region") == "eu"),
        ({"tf": {"key": "region", "cmp": "eq", "val": "eu"}}, None, lambda t: t.get("region") == "eu"),
        ({"filter": 'region == "eu"'}, Filter.eq("plan", "pro"), lambda t: t.get("plan") == "pro" and t.get("region") == "eu"),
        # The client asks for everything; the token still decides.
        (
            {"tf": {"key": "region", "cmp": "eq", "val": "eu"}},
            Filter.any(Filter.exists("region"), Filter.not_exists("region")),
            lambda t: t.get("region") == "eu",
        ),
    ],
    ids=["filter claim", "tf claim", "filter claim and client filter", "tf claim client widens"],
)
async def test_token_filter_limits_what_the_client_receives(server, codec, make_client, claims, client_filter, want):
    client = make_client(user="erin")
    await connected(client)
    ch = unique_channel("secret:tf-")
    opts = {"token": sign_token({"sub": "erin", "channel": ch, **claims})}
    if client_filter is not None:
        opts["tags_filter"] = client_filter
    sub = new_sub(client, ch, **opts)
    await subscribed(sub)
    for i, tags in enumerate(REGION_MIX):
        await publish_tagged(server, ch, i, tags)
    marker = len(REGION_MIX)
    await publish_tagged(server, ch, marker, {"region": "eu", "plan": "pro"})

    got = await received_until(codec, sub, marker)
    assert got == [i for i, tags in enumerate(REGION_MIX) if want(tags)] + [marker]


SIGNS = ["€", "₽", "₤"]  # the same first two UTF-8 bytes


def doc_text(version):
    """A large JSON document as text of which consecutive versions differ in a
    few values, among them currency signs whose UTF-8 forms share their lead
    bytes: a delta must not split them."""
    rows = []
    for r in range(150):
        moved = r % 37 == version % 37
        sign = SIGNS[version % 3] if moved else SIGNS[0]
        price = 1000 + r + (version if moved else 0)
        rows.append({"id": f"R{r}", "price": price, "name": f"Zürich {sign} instrument {r}"})
    return json.dumps({"version": version, "rows": rows}, ensure_ascii=False, separators=(",", ":"))


async def publish_docs(server, ch, versions, delta=True):
    sent = []
    for v in versions:
        text = doc_text(v)
        body = '{"channel":' + json.dumps(ch) + ',"data":' + text + (',"delta":true' if delta else "") + "}"
        await asyncio.to_thread(publish_raw, server, body)
        sent.append(text)
    return sent


async def expect_decoded(codec, sub, sent, since=0):
    """The publications after since decode to exactly what was sent, in order:
    the same bytes on protobuf, the same value on JSON."""
    ctxs = await sub.rec.wait_count("publication", len(sent), since=since, timeout=10)
    for i, (ctx, text) in enumerate(zip(ctxs, sent)):
        if codec.use_protobuf:
            assert bytes(ctx.pub.data) == text.encode(), f"publication {i} decodes differently"
        else:
            assert ctx.pub.data == json.loads(text), f"publication {i} decodes differently"
    return [ctx.pub for ctx in ctxs]


@pytest.mark.parametrize("namespace, ask", [("prices", True), ("ticks", False)], ids=["delta requested", "delta_publish"])
async def test_fossil_delta_decodes_to_what_was_published(server, codec, make_client, namespace, ask):
    client = make_client()
    await connected(client)
    ch = unique_channel(namespace + ":d-")
    sub = new_sub(client, ch, delta=DeltaType.FOSSIL)
    await subscribed(sub)
    plain_client = make_client(user="bob")
    await connected(plain_client)
    plain = new_sub(plain_client, ch)
    await subscribed(plain)

    sent = await publish_docs(server, ch, range(10), delta=ask)
    pubs = await expect_decoded(codec, sub, sent)
    assert [p.delta for p in pubs] == [False] + [True] * 9, "only the first publication comes in full"
    plain_pubs = await expect_decoded(codec, plain, sent)
    assert not any(p.delta for p in plain_pubs), "a subscriber without delta gets full payloads"


async def test_fossil_delta_refused_where_not_allowed(make_client):
    client = make_client()
    await connected(client)
    ctx = await subscribe_fails(new_sub(client, unique_channel("chat:d-"), delta=DeltaType.FOSSIL))
    assert ctx.code == 107, f"unsubscribed: {ctx!r}"
