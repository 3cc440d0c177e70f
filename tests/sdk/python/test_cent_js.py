"""A publication sent through PyPI cent reaches a centrifuge-js client.

Both sides are the real packages: cent here, the npm centrifuge builds in a
Node process (js_subscriber.mjs) that reports what it receives on stdout.
"""

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
from cent import PublishRequest

from gyre_sdk import WAIT, unique_channel
from gyre_server import sign_token

HERE = Path(__file__).resolve().parent
JS_DIR = HERE.parent / "js"
SCRIPT = HERE / "js_subscriber.mjs"

PAYLOAD = {"text": "from cent", "n": 7, "nested": {"unicode": "héllo ✓ 🚀"}}


@pytest.fixture(params=["json", "protobuf"])
def js_build(request):
    return request.param


def require_js_sdk():
    if shutil.which("node") is None:
        pytest.fail("node is not on PATH; these tests need Node.js 20+")
    if not (JS_DIR / "node_modules" / "centrifuge").is_dir():
        pytest.fail("tests/sdk/js/node_modules is missing: run scripts/sdk-test js (or npm ci there) first")


async def read_event(proc, what):
    line = await asyncio.wait_for(proc.stdout.readline(), WAIT * 2)
    if not line:
        err = (await proc.stderr.read()).decode(errors="replace")
        raise AssertionError(f"js_subscriber ended before {what}; stderr:\n{err}")
    event = json.loads(line)
    assert event["event"] != "error", f"js_subscriber before {what}: {event['message']}"
    return event


async def test_js_client_receives_cent_publication(server, api, js_build):
    require_js_sdk()
    ch = unique_channel("chat:js-")
    env = {
        **os.environ,
        "GYRE_WS_URL": server.ws_url,
        "GYRE_TOKEN": sign_token({"sub": "js-user"}),
        "GYRE_CHANNEL": ch,
        "GYRE_BUILD": js_build,
        "GYRE_COUNT": "2",
    }
    proc = await asyncio.create_subprocess_exec(
        "node", str(SCRIPT), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        sub = await read_event(proc, "subscribing")
        assert (sub["event"], sub["channel"], sub["recoverable"]) == ("subscribed", ch, True), sub

        first = await api.publish(PublishRequest(channel=ch, data=PAYLOAD, tags={"from": "cent"}))
        second = await api.publish(PublishRequest(channel=ch, data={"n": 2}))
        got = [await read_event(proc, "a publication") for _ in range(2)]
        # Sorted: centrifuge-js may hand over publications that arrive in
        # separate frames out of order (see protocol.md); order is checked at
        # the wire elsewhere.
        got.sort(key=lambda e: e["offset"])
        assert got[0] == {
            "event": "publication",
            "channel": ch,
            "data": PAYLOAD,
            "offset": first.offset,
            "tags": {"from": "cent"},
        }
        assert (got[1]["data"], got[1]["offset"]) == ({"n": 2}, second.offset)
        assert await asyncio.wait_for(proc.wait(), WAIT) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
