"""The gRPC server API from Python: grpcio with stubs generated, at test time,
from server/grpcapi/apipb/api.proto by grpcio-tools, against the real gyre
binary with grpc_api enabled.

Publishes through the gRPC API, reads the history back (over gRPC and over
HTTP), runs a batch, calls rpc (unknown without an RPC proxy: 104), and checks
that a wrong or missing key is refused with UNAUTHENTICATED.
"""

import json

import grpc
import pytest

import grpc_stubs
from gyre_server import GyreServer, base_config, free_port

GRPC_KEY = "gyre-sdk-test-grpc-key"


@pytest.fixture(scope="module")
def pb():
    """api_pb2 and api_pb2_grpc."""
    return grpc_stubs.generate("server/grpcapi/apipb/api.proto")


@pytest.fixture(scope="module")
def grpc_server():
    grpc_port = free_port()

    def config(port):
        cfg = base_config(port)
        cfg["grpc_api"] = {"enabled": True, "address": "127.0.0.1", "port": grpc_port, "key": GRPC_KEY}
        return cfg

    s = GyreServer(config=config)
    s.grpc_addr = f"127.0.0.1:{grpc_port}"
    yield s
    s.stop()


@pytest.fixture
def stub(pb, grpc_server):
    _, api_pb2_grpc = pb
    with grpc.insecure_channel(grpc_server.grpc_addr) as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        yield api_pb2_grpc.CentrifugoApiStub(channel)


def key(value=GRPC_KEY):
    return (("authorization", f"apikey {value}"),)


def test_publish_then_history(pb, stub, grpc_server):
    api_pb2, _ = pb
    offsets = []
    for i in range(3):
        resp = stub.Publish(
            api_pb2.PublishRequest(channel="chat:grpc", data=json.dumps({"i": i}).encode(), tags={"via": "python"}),
            metadata=key(),
            timeout=5,
        )
        assert not resp.HasField("error"), resp.error
        offsets.append(resp.result.offset)
    assert offsets == [1, 2, 3]

    hist = stub.History(api_pb2.HistoryRequest(channel="chat:grpc", limit=-1), metadata=key(), timeout=5)
    assert not hist.HasField("error"), hist.error
    assert [json.loads(p.data) for p in hist.result.publications] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert [p.offset for p in hist.result.publications] == [1, 2, 3]
    assert hist.result.publications[0].tags["via"] == "python"
    assert hist.result.epoch

    # The same node answers the HTTP API: one server, two doors.
    over_http = grpc_server.api("history", {"channel": "chat:grpc", "limit": -1})
    assert [p["data"] for p in over_http["publications"]] == [{"i": 0}, {"i": 1}, {"i": 2}]


def test_errors_in_the_response(pb, stub):
    api_pb2, _ = pb
    resp = stub.Publish(api_pb2.PublishRequest(channel="nope:x", data=b"{}"), metadata=key(), timeout=5)
    assert resp.error.code == 102 and resp.error.message == "unknown channel"
    resp = stub.History(api_pb2.HistoryRequest(channel="plain"), metadata=key(), timeout=5)
    assert resp.error.code == 108


def test_batch(pb, stub):
    api_pb2, _ = pb
    resp = stub.Batch(
        api_pb2.BatchRequest(
            commands=[
                api_pb2.Command(publish=api_pb2.PublishRequest(channel="chat:batch", data=b'{"n":1}')),
                api_pb2.Command(publish=api_pb2.PublishRequest(channel="chat:batch")),
                api_pb2.Command(history=api_pb2.HistoryRequest(channel="chat:batch", limit=10)),
            ]
        ),
        metadata=key(),
        timeout=5,
    )
    assert len(resp.replies) == 3
    assert resp.replies[0].publish.offset == 1
    assert resp.replies[1].error.code == 107
    assert [json.loads(p.data) for p in resp.replies[2].history.publications] == [{"n": 1}]


def test_rpc_without_proxy(pb, stub):
    api_pb2, _ = pb
    resp = stub.RPC(api_pb2.RPCRequest(method="anything", params=b"{}"), metadata=key(), timeout=5)
    assert resp.error.code == 104


@pytest.mark.parametrize("metadata", [key("wrong-key"), ()], ids=["wrong key", "no key"])
def test_refused_without_the_key(pb, stub, metadata):
    api_pb2, _ = pb
    with pytest.raises(grpc.RpcError) as err:
        stub.Publish(api_pb2.PublishRequest(channel="chat:grpc", data=b"{}"), metadata=metadata, timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
