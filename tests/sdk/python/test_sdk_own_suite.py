"""centrifuge-python's own test suite, run against gyre.

The SDK's sdist carries its tests (tests/), written against a Centrifugo v6 on
localhost:8000 set up by the SDK's docker-compose.yml. scripts/sdk-test downloads
the sdist of the version requirements.txt pins into .venv/sdk-own/ and names the
unpacked folder in CENTRIFUGE_PYTHON_SUITE; this test starts gyre on
127.0.0.1:8000 with those settings in Centrifugo v6 keys and runs the suite with
the SDK's own runner, unittest. Most of the suite talks to a fake server of its
own; test_client.py talks to gyre.
"""

import os
import re
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from gyre_server import GyreServer

PORT = 8000
SUITE_LIMIT = int(os.environ.get("CENTRIFUGE_PYTHON_SUITE_LIMIT", "300"))

HERE = Path(__file__).resolve().parent


def suite_dir():
    """The unpacked sdist of the installed centrifuge-python."""
    if os.environ.get("CENTRIFUGE_PYTHON_SUITE"):
        return Path(os.environ["CENTRIFUGE_PYTHON_SUITE"])
    return HERE / ".venv" / "sdk-own" / f"centrifuge_python-{version('centrifuge-python')}"


def sdk_compose_config(port):
    """The server of the SDK's docker-compose.yml, in Centrifugo v6 keys."""
    history = {"history_size": 100, "history_ttl": "300s", "force_recovery": True}
    return {
        "http_server": {"port": port},
        "log": {"level": "info"},
        "health": {"enabled": True},
        "client": {
            "token": {"hmac_secret_key": "secret"},
            "subscribe_to_user_personal_channel": {"enabled": True},
        },
        "channel": {
            "without_namespace": {
                "allowed_delta_types": ["fossil"],
                "delta_publish": True,
                "presence": True,
                "join_leave": True,
                "force_push_join_leave": True,
                **history,
                "allow_publish_for_subscriber": True,
                "allow_presence_for_subscriber": True,
                "allow_history_for_subscriber": True,
            },
            "namespaces": [
                {
                    "name": "smallhistory",
                    "force_recovery": True,
                    "history_size": 2,
                    "history_ttl": "300s",
                    "allow_publish_for_subscriber": True,
                    "allow_history_for_subscriber": True,
                },
                {
                    "name": "example",
                    "presence": True,
                    "join_leave": True,
                    "force_push_join_leave": True,
                    "history_size": 300,
                    "history_ttl": "300s",
                    "allow_publish_for_subscriber": True,
                    "allow_presence_for_subscriber": True,
                    "allow_history_for_subscriber": True,
                },
            ],
        },
    }


def port_taken(port):
    """Whether anything listens on the port, on any loopback address the
    suite's "localhost" may resolve to, or holds it."""
    for family, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(1)
            try:
                if s.connect_ex((addr, port)) == 0:
                    return True
            except OSError:
                pass
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # As gyre's listener does, so that connections of an earlier run
        # still in TIME_WAIT do not count.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


@pytest.mark.timeout(SUITE_LIMIT + 60)
def test_centrifuge_python_own_suite():
    suite = suite_dir()
    if not (suite / "tests").is_dir():
        pytest.fail(
            f"centrifuge-python's own tests are not at {suite}/tests: scripts/sdk-test python "
            "downloads them (pip download --no-binary :all: centrifuge-python)"
        )
    if port_taken(PORT):
        pytest.fail(f"port {PORT} is taken: the SDK's own tests only talk to localhost:{PORT}")
    server = GyreServer(config=sdk_compose_config, port=PORT)
    try:
        # The suite takes well under a minute; some of its tests wait for an
        # event without a time limit, so a server that never sends it would
        # hang the run, which the limit turns into a failure.
        run = subprocess.run(
            [sys.executable, "-m", "unittest", "discover", "-s", "tests"],
            cwd=suite,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=SUITE_LIMIT,
        )
    except subprocess.TimeoutExpired as e:
        out = (e.output or b"").decode(errors="replace")
        pytest.fail(f"centrifuge-python's suite did not finish within {SUITE_LIMIT}s; its output:\n{out[-20000:]}\n\ngyre log:\n{server.log()[-20000:]}")
    finally:
        log = server.log()
        server.stop()
    out = run.stdout.decode(errors="replace")
    ran = re.search(r"^Ran (\d+) tests?", out, re.M)
    summary = "\n".join(line for line in out.splitlines() if re.match(r"^(FAIL|ERROR|Ran |OK|FAILED)", line))
    assert run.returncode == 0, (
        f"centrifuge-python's suite failed against gyre:\n{summary}\n\n{out[-20000:]}\n\ngyre log:\n{log[-20000:]}"
    )
    # A suite that found nothing to run also exits 0.
    assert ran and int(ran.group(1)) >= 100, f"centrifuge-python's suite ran too little:\n{summary}"
