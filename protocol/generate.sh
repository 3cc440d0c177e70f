#!/usr/bin/env bash
# Regenerates the Go code for client.proto, with vtprotobuf's clone and equal
# besides marshal, unmarshal and size (callers and tests use them).
set -euo pipefail
cd "$(dirname "$0")"
exec ../scripts/protoc-go . client.proto marshal+unmarshal+size+clone+equal
