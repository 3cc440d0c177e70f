#!/usr/bin/env bash
# Regenerates the Go code for hooks.proto: messages, vtproto codecs and the
# gRPC service.
set -euo pipefail
cd "$(dirname "$0")"
exec ../../../scripts/protoc-go --grpc . hooks.proto
