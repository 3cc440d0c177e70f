"""Starts a real gyre server process and talks to its HTTP API.

The binary comes from GYRE_BIN (scripts/sdk-test builds it once); without it one
is built from the repository so that the tests can be run by hand.
"""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import jwt

HMAC_SECRET = "gyre-sdk-test-secret-0123456789abcdef"
API_KEY = "gyre-sdk-test-apikey"

REPO_ROOT = Path(__file__).resolve().parents[3]

_built_bin = None


def base_config(port):
    """The configuration every scenario relies on: a history namespace with
    presence for recovery and join/leave, and a "private" namespace where nothing
    is allowed without a subscription token."""
    return {
        "http_server": {"port": port},
        "log": {"level": "info"},
        "client": {"token": {"hmac_secret_key": HMAC_SECRET}, "allowed_origins": ["*"]},
        "http_api": {"key": API_KEY},
        "health": {"enabled": True},
        "channel": {
            "without_namespace": {"allow_subscribe_for_client": True},
            "namespaces": [
                {
                    "name": "chat",
                    "presence": True,
                    "join_leave": True,
                    "force_push_join_leave": True,
                    "history_size": 100,
                    "history_ttl": "300s",
                    "force_recovery": True,
                    "allow_subscribe_for_client": True,
                    "allow_presence_for_subscriber": True,
                    "allow_history_for_subscriber": True,
                    "allow_publish_for_subscriber": True,
                },
                {"name": "private"},
            ],
        },
    }


def gyre_bin():
    global _built_bin
    if os.environ.get("GYRE_BIN"):
        return os.environ["GYRE_BIN"]
    if _built_bin is None:
        out = Path(tempfile.mkdtemp(prefix="gyre-bin-")) / "gyre"
        subprocess.run(["go", "build", "-o", str(out), "./cmd/gyre"], cwd=REPO_ROOT, check=True)
        _built_bin = str(out)
    return _built_bin


def free_port():
    """An unused loopback port. Another process could take it before gyre binds;
    that shows up as a start failure with the server log attached."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class ApiError(Exception):
    pass


class GyreServer:
    """One gyre process with its own config and log in a temp dir."""

    def __init__(self, config=None, ready_timeout=15.0, port=None):
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="gyre-sdk-"))
        cfg = (config or base_config)(self.port)
        cfg_path = self.dir / "config.json"
        cfg_path.write_text(json.dumps(cfg, indent=2))
        self.log_path = self.dir / "gyre.log"
        self.http_url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}/connection/websocket"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [gyre_bin(), "-c", str(cfg_path)], stdout=log, stderr=subprocess.STDOUT
            )
        try:
            self._wait_healthy(ready_timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"gyre exited with {self.proc.returncode} before becoming healthy; log:\n{self.log()}"
                )
            try:
                status, _ = _request("GET", f"{self.http_url}/health")
                if status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"gyre not healthy on port {self.port} within {timeout}s; log:\n{self.log()}"
                )
            time.sleep(0.05)

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not os.environ.get("GYRE_SDK_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def api(self, method, body):
        """Posts to /api/<method> and returns "result", raising on any error."""
        status, text = _request(
            "POST",
            f"{self.http_url}/api/{method}",
            json.dumps(body).encode(),
            {"Content-Type": "application/json", "X-API-Key": API_KEY},
        )
        if status != 200:
            raise ApiError(f"api {method}: HTTP {status}: {text}")
        try:
            reply = json.loads(text)
        except ValueError as e:
            raise ApiError(f"api {method}: answer is not JSON: {text}") from e
        if reply.get("error"):
            raise ApiError(f"api {method}: error {reply['error']}")
        return reply.get("result", {})

    def publish(self, channel, data):
        return self.api("publish", {"channel": channel, "data": data})


def sign_token(claims, secret=HMAC_SECRET):
    """An HS256 JWT from claims; exp defaults to an hour from now."""
    now = int(time.time())
    return jwt.encode({"exp": now + 3600, "iat": now, **claims}, secret, algorithm="HS256")
