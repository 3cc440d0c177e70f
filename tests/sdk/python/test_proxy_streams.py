"""Subscription streams seen by centrifuge-python: a gRPC backend written here
with grpcio (stubs generated at test time from server/proxy/proxypb/proxy.proto
by grpcio-tools) serves SubscribeUnidirectional and SubscribeBidirectional, and
the real gyre binary routes two namespaces to it. Every scenario runs over the
SDK's JSON and protobuf clients.

- ticks: (one-way) the backend's first message answers the subscribe with data,
  its publications reach the subscriber in order, and unsubscribing cancels the
  backend's stream;
- echo: (two-way) what the client publishes goes to the backend on the stream,
  which answers with a publication for that client.
"""

import asyncio
import queue
import threading
from concurrent import futures

import grpc
import pytest

import grpc_stubs
from gyre_server import GyreServer, base_config, free_port
from gyre_sdk import connected, new_sub, subscribed, unique_channel



@pytest.fixture(scope="module")
def pb():
    """proxy_pb2 and proxy_pb2_grpc."""
    return grpc_stubs.generate("server/proxy/proxypb/proxy.proto")


class StreamBackend:
    """The application backend: a queue of publications per one-way stream,
    an echo for two-way ones, and the channels whose streams have ended."""

    def __init__(self, proxy_pb2):
        self.pb = proxy_pb2
        self.lock = threading.Lock()
        self.feeds = {}
        self.requests = []
        self.ended = []

    def feed(self, channel):
        with self.lock:
            return self.feeds.setdefault(channel, queue.Queue())

    def _started(self, request, context):
        with self.lock:
            self.requests.append(request)
        channel = request.channel

        def ended():
            with self.lock:
                self.ended.append(channel)

        context.add_callback(ended)

    def _accept(self, data):
        pb = self.pb
        return pb.StreamSubscribeResponse(
            subscribe_response=pb.SubscribeResponse(result=pb.SubscribeResult(data=data))
        )

    def SubscribeUnidirectional(self, request, context):
        self._started(request, context)
        feed = self.feed(request.channel)
        yield self._accept(b'{"stream":"ticks"}')
        while context.is_active():
            try:
                data = feed.get(timeout=0.05)
            except queue.Empty:
                continue
            yield self.pb.StreamSubscribeResponse(publication=self.pb.Publication(data=data))

    def SubscribeBidirectional(self, request_iterator, context):
        first = next(request_iterator)
        self._started(first.subscribe_request, context)
        yield self._accept(b'{"stream":"echo"}')
        for req in request_iterator:
            echo = b'{"echo":' + req.publication.data + b"}"
            yield self.pb.StreamSubscribeResponse(publication=self.pb.Publication(data=echo))


@pytest.fixture(scope="module")
def backend(pb):
    proxy_pb2, proxy_pb2_grpc = pb
    impl = StreamBackend(proxy_pb2)
    servicer = type("Servicer", (proxy_pb2_grpc.CentrifugoProxyServicer,), {
        "SubscribeUnidirectional": lambda self, r, c: impl.SubscribeUnidirectional(r, c),
        "SubscribeBidirectional": lambda self, r, c: impl.SubscribeBidirectional(r, c),
    })()
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    proxy_pb2_grpc.add_CentrifugoProxyServicer_to_server(servicer, srv)
    port = free_port()
    srv.add_insecure_port(f"127.0.0.1:{port}")
    srv.start()
    impl.addr = f"127.0.0.1:{port}"
    yield impl
    srv.stop(grace=None)


@pytest.fixture(scope="module")
def server(backend):
    """Overrides conftest's server: gyre with two streaming namespaces."""

    def config(port):
        cfg = base_config(port)
        ch = cfg["channel"]
        ch["proxy"] = {"subscribe_stream": {"endpoint": f"grpc://{backend.addr}", "timeout": "3s"}}
        ch["namespaces"] += [
            {"name": "ticks", "subscribe_stream_proxy_enabled": True},
            {"name": "echo", "subscribe_stream_proxy_enabled": True, "subscribe_stream_proxy_bidirectional": True},
        ]
        return cfg

    s = GyreServer(config=config)
    yield s
    s.stop()


async def wait_until(cond, what, timeout=5.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_one_way_stream(backend, codec, make_client):
    client = make_client(user="sam")
    await connected(client)
    ch = unique_channel("ticks:")
    sub = new_sub(client, ch)
    ctx = await subscribed(sub)
    assert codec.decode(ctx.data) == {"stream": "ticks"}

    with backend.lock:
        req = next(r for r in backend.requests if r.channel == ch)
    assert req.user == "sam"
    assert req.protocol == ("protobuf" if codec.use_protobuf else "json")

    feed = backend.feed(ch)
    for n in range(3):
        feed.put(b'{"n":%d}' % n)
    for n in range(3):
        pub = await sub.rec.wait("publication", since=0, match=lambda c, n=n: codec.decode(c.pub.data) == {"n": n})
        assert pub.pub.offset == 0, "a stream publication has no offset"
    got = [codec.decode(c.pub.data) for c in sub.rec.all("publication")]
    assert got == [{"n": 0}, {"n": 1}, {"n": 2}], "publications arrive in the backend's order"

    await sub.unsubscribe()
    await wait_until(lambda: ch in backend.ended, f"the backend stream of {ch} to end")


async def test_two_way_stream(backend, codec, make_client):
    client = make_client(user="eve")
    await connected(client)
    ch = unique_channel("echo:")
    sub = new_sub(client, ch)
    ctx = await subscribed(sub)
    assert codec.decode(ctx.data) == {"stream": "echo"}

    await sub.publish(codec.encode({"say": "hi"}))
    ctx = await sub.rec.wait("publication")
    assert codec.decode(ctx.pub.data) == {"echo": {"say": "hi"}}

    await client.disconnect()
    await wait_until(lambda: ch in backend.ended, f"the backend stream of {ch} to end")
