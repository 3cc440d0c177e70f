#!/usr/bin/env bash
# Regenerates the Go code for wire.proto.
set -euo pipefail
cd "$(dirname "$0")"
exec ../../../../scripts/protoc-go . wire.proto
