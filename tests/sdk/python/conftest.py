"""Fixtures: one gyre per test module, every client test under both codecs."""

import pytest
import pytest_asyncio

from gyre_sdk import CODECS, new_client
from gyre_server import GyreServer

# The cent fixtures (flavour, api) for the tests of the server API client.
pytest_plugins = ["gyre_cent"]


@pytest.fixture(scope="module")
def server():
    s = GyreServer()
    yield s
    s.stop()


@pytest.fixture(params=CODECS, ids=lambda c: c.name)
def codec(request):
    return request.param


@pytest_asyncio.fixture
async def make_client(server, codec):
    """Makes clients for the test and disconnects them all at its end."""
    made = []

    def make(user="alice", token=None, url=None):
        client = new_client(server, codec, user=user, token=token, url=url)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.disconnect()
