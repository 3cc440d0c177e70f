#!/usr/bin/env bash
# Regenerates the Go code for control.proto.
set -euo pipefail
cd "$(dirname "$0")"
exec ../../scripts/protoc-go . control.proto
