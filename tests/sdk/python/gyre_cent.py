"""PyPI cent, the server API client, in both its flavours behind one shape."""

import asyncio

import pytest
import pytest_asyncio
from cent import AsyncClient, Client

from gyre_sdk import WAIT
from gyre_server import API_KEY


class CentApi:
    """A cent client of either flavour behind awaitable methods, so that each
    test runs unchanged with both. Sync calls run in a worker thread: the event
    loop must keep reading the observing connections while one is in flight."""

    def __init__(self, flavour, client):
        self.flavour = flavour
        self.client = client

    def __getattr__(self, method):
        call = getattr(self.client, method)
        if self.flavour == "async":
            return call

        async def in_thread(request):
            return await asyncio.to_thread(call, request)

        return in_thread

    async def close(self):
        if self.flavour == "async":
            await self.client.close()
        else:
            self.client.close()


def open_api(flavour, server, key=API_KEY):
    """A cent client of flavour ("sync" or "async") for the server's API."""
    url = f"{server.http_url}/api"
    if flavour == "async":
        return CentApi(flavour, AsyncClient(url, key, timeout=WAIT))
    return CentApi(flavour, Client(url, key, timeout=WAIT))


# Fixtures for test modules to import: every cent test runs with both flavours.


@pytest.fixture(params=["sync", "async"])
def flavour(request):
    return request.param


@pytest_asyncio.fixture
async def api(flavour, server):
    a = open_api(flavour, server)
    yield a
    await a.close()
