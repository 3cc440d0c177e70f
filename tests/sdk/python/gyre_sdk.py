"""Helpers to drive centrifuge-python clients against a gyre server."""

import asyncio
import json
import random
import string
from dataclasses import dataclass
from typing import Any, Callable

from centrifuge import Client, ClientEventHandler, SubscriptionEventHandler

from gyre_server import sign_token

WAIT = 5.0


@dataclass(frozen=True)
class Codec:
    """One wire format of the SDK. On protobuf connections data travels as bytes
    and the application encodes and decodes it."""

    name: str
    use_protobuf: bool
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


CODECS = [
    Codec("json", False, lambda v: v, lambda v: v),
    Codec(
        "protobuf",
        True,
        lambda v: json.dumps(v).encode(),
        lambda v: json.loads(bytes(v).decode()),
    ),
]


class Recorder:
    """Keeps every event a client or subscription fires, so that a test can wait
    for one without racing its emission."""

    def __init__(self):
        self.entries = []
        self._changed = asyncio.Event()

    def add(self, name, ctx):
        self.entries.append((name, ctx))
        self._changed.set()

    def mark(self):
        return len(self.entries)

    def all(self, name, since=0):
        return [ctx for n, ctx in self.entries[since:] if n == name]

    def _find(self, names, match, since):
        for n, ctx in self.entries[since:]:
            if n in names and match(ctx):
                return n, ctx
        return None

    async def wait_any(self, names, match=lambda ctx: True, since=0, timeout=WAIT, what=None):
        """The first event with one of names that matches, recorded at or after since."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            hit = self._find(names, match, since)
            if hit:
                return hit
            self._changed.clear()
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                seen = "\n  ".join(f"{n} {ctx!r}" for n, ctx in self.entries)
                raise AssertionError(
                    f"no {what or '/'.join(names)!r} within {timeout}s; events seen:\n  {seen}"
                ) from None

    async def wait(self, name, **kw):
        return (await self.wait_any([name], **kw))[1]

    async def wait_count(self, name, n, since=0, timeout=WAIT):
        """The first n events of a name recorded after since."""
        await self.wait_any(
            [name],
            match=lambda _: len(self.all(name, since)) >= n,
            since=since,
            timeout=timeout,
            what=f"{n} x {name}",
        )
        return self.all(name, since)[:n]


def _recording_handler(base, events):
    """A handler class of base whose on_<event> methods record into a Recorder."""

    def method(name):
        async def on_event(self, ctx):
            self.rec.add(name, ctx)

        return on_event

    attrs = {f"on_{name}": method(name) for name in events}
    attrs["__init__"] = lambda self, rec: setattr(self, "rec", rec)
    return type(f"Recording{base.__name__}", (base,), attrs)


ClientEvents = _recording_handler(
    ClientEventHandler, ["connecting", "connected", "disconnected", "error"]
)
# ServerSideEvents also records the events of server-side subscriptions, which
# centrifuge-python reports on the client's handler rather than on a Subscription.
ServerSideEvents = _recording_handler(
    ClientEventHandler,
    [
        "connecting",
        "connected",
        "disconnected",
        "error",
        "subscribing",
        "subscribed",
        "unsubscribed",
        "publication",
        "join",
        "leave",
    ],
)
SubEvents = _recording_handler(
    SubscriptionEventHandler,
    ["subscribing", "subscribed", "unsubscribed", "publication", "join", "leave", "error"],
)


def new_client(server, codec, user="alice", token=None, url=None, events=ClientEvents, get_token=None):
    """A client of codec for user with a token signed by the server's key unless
    token is given, connecting to url (default: the server). Reconnect delays are
    short so that tests do not wait. events is the recording handler class;
    get_token, when given, is the SDK's callback for fresh tokens."""
    rec = Recorder()
    client = Client(
        url or server.ws_url,
        events=events(rec),
        get_token=get_token,
        token=token if token is not None else sign_token({"sub": user}),
        use_protobuf=codec.use_protobuf,
        timeout=WAIT,
        min_reconnect_delay=0.05,
        max_reconnect_delay=0.5,
        proxy=None,
    )
    client.rec = rec
    return client


def new_sub(client, channel, **opts):
    rec = Recorder()
    sub = client.new_subscription(channel, events=SubEvents(rec), **opts)
    sub.rec = rec
    return sub


async def connected(client):
    since = client.rec.mark()
    await client.connect()
    return await client.rec.wait("connected", since=since)


async def subscribed(sub):
    """Subscribes and waits for the subscribed event, failing early with the
    reason when the subscription ends unsubscribed instead."""
    since = sub.rec.mark()
    await sub.subscribe()
    name, ctx = await sub.rec.wait_any(
        ["subscribed", "unsubscribed"], since=since, what=f"subscribed to {sub.channel}"
    )
    if name != "subscribed":
        raise AssertionError(f"subscription to {sub.channel} ended unsubscribed: {ctx!r}")
    return ctx


async def subscribe_fails(sub):
    """Subscribes and returns the unsubscribed context; fails when the
    subscription succeeds instead."""
    since = sub.rec.mark()
    await sub.subscribe()
    name, ctx = await sub.rec.wait_any(
        ["subscribed", "unsubscribed"], since=since, what=f"refusal of {sub.channel}"
    )
    if name != "unsubscribed":
        raise AssertionError(f"subscription to {sub.channel} succeeded, a refusal was expected: {ctx!r}")
    return ctx


def unique_channel(prefix):
    """Each test gets its own channel so tests never see each other's publications."""
    return prefix + "".join(random.choices(string.ascii_lowercase + string.digits, k=10))


async def publish(server, channel, data):
    """Publishes through the HTTP API off the event loop, so that the SDK keeps
    reading its socket meanwhile."""
    return await asyncio.to_thread(server.publish, channel, data)
