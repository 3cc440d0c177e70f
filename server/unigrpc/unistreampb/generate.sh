#!/usr/bin/env bash
# Regenerates the Go code for unistream.proto: messages, the gRPC service and
# vtproto unmarshal code (the server reads ConnectRequests with it; it never
# marshals these messages, it sends the client protocol's bytes).
set -euo pipefail
cd "$(dirname "$0")"
exec ../../../scripts/protoc-go --grpc . unistream.proto unmarshal
