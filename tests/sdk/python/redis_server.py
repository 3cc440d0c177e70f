"""A throwaway redis-server for tests that run gyre on the Redis engine.
Persistence is off; the process and its directory go away on stop()."""

import os
import shutil
import socket
import subprocess
import tempfile
import time

from gyre_server import free_port


def redis_missing():
    """Why Redis tests cannot run here, or "" when redis-server is installed."""
    if shutil.which("redis-server"):
        return ""
    return (
        "redis-server not found: install it with scripts/install-redis, "
        "or set GYRE_SKIP_REDIS=1 to skip Redis tests"
    )


def redis_skip():
    """The reason to skip Redis tests (GYRE_SKIP_REDIS=1 and no redis-server),
    or "": without the variable a missing redis-server fails them instead."""
    missing = redis_missing()
    return missing if missing and os.environ.get("GYRE_SKIP_REDIS") == "1" else ""


def _pong(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    def __init__(self, ready_timeout=15.0):
        missing = redis_missing()
        if missing:
            raise RuntimeError(missing)
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.dir = tempfile.mkdtemp(prefix="gyre-redis-")
        self.proc = subprocess.Popen(
            [
                "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir", self.dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + ready_timeout
        while not _pong(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server on port {self.port} did not answer PING")
            time.sleep(0.02)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
