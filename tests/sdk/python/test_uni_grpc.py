"""uni_grpc consumed by a Python grpcio client whose stubs are generated here,
at test time, from the repository's unistream.proto with grpc_tools.protoc.

The consumer receives the connect push, then publications made through the
HTTP API in order, then a disconnect push, after which the call ends with
status OK; a bad token is a disconnect push 3500.
"""

import json

import grpc
import pytest

import grpc_stubs
from gyre_server import GyreServer, base_config, free_port, sign_token

CALL_TIMEOUT = 20


@pytest.fixture(scope="module")
def stubs():
    """unistream_pb2 and unistream_pb2_grpc."""
    return grpc_stubs.generate("server/unigrpc/unistreampb/unistream.proto")


@pytest.fixture(scope="module")
def uni_server():
    grpc_port = free_port()

    def config(port):
        cfg = base_config(port)
        cfg["uni_grpc"] = {"enabled": True, "address": "127.0.0.1", "port": grpc_port}
        return cfg

    s = GyreServer(config=config)
    s.grpc_target = f"127.0.0.1:{grpc_port}"
    yield s
    s.stop()


@pytest.fixture
def consume(uni_server, stubs):
    pb2, pb2_grpc = stubs
    channel = grpc.insecure_channel(uni_server.grpc_target)
    stub = pb2_grpc.CentrifugoUniStreamStub(channel)

    def call(token):
        return stub.Consume(pb2.ConnectRequest(token=token, name="python"), timeout=CALL_TIMEOUT)

    yield call
    channel.close()


def non_ping(stream):
    """The next push that is not a ping (an empty Push)."""
    for push in stream:
        if push.ListFields():
            return push
    raise AssertionError("stream ended")


def test_connect_publications_disconnect(uni_server, consume):
    token = sign_token({"sub": "uni-py", "channels": ["uni_news"]})
    stream = consume(token)
    first = next(stream)
    assert first.HasField("connect"), first
    assert first.connect.client
    assert "uni_news" in first.connect.subs

    for i in range(5):
        uni_server.publish("uni_news", {"n": i})
    for i in range(5):
        push = non_ping(stream)
        assert push.channel == "uni_news" and push.HasField("pub"), push
        assert json.loads(push.pub.data) == {"n": i}

    uni_server.api("disconnect", {"user": "uni-py"})
    push = non_ping(stream)
    assert push.HasField("disconnect") and push.disconnect.code == 3503, push
    assert list(stream) == []
    assert stream.code() == grpc.StatusCode.OK


def test_bad_token(consume):
    stream = consume("not-a-jwt")
    push = next(stream)
    assert push.HasField("disconnect") and push.disconnect.code == 3500, push
    assert list(stream) == []
    assert stream.code() == grpc.StatusCode.OK
