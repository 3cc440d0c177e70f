#!/usr/bin/env bash
# Regenerates the Go code for redis_wire.proto.
set -euo pipefail
cd "$(dirname "$0")"
exec ../../../../scripts/protoc-go . redis_wire.proto
