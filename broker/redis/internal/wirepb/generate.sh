#!/usr/bin/env bash
# Regenerates the Go code for wire.proto: protoc-gen-go for the message types and
# protoc-gen-go-vtproto for reflection-free marshal, unmarshal and size. Plugin
# versions are pinned so that the output is reproducible; keep them in step with go.mod.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_VTPROTO_VERSION=v0.6.0

cd "$(dirname "$0")"

if ! command -v protoc >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	$sudo apt-get update
	$sudo apt-get install -y protobuf-compiler
fi

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}"
GOBIN="$bin" go install "github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@${PROTOC_GEN_GO_VTPROTO_VERSION}"

PATH="$bin:$PATH" protoc \
	--go_out=. --go_opt=paths=source_relative \
	--go-vtproto_out=. --go-vtproto_opt=paths=source_relative,features=marshal+unmarshal+size \
	wire.proto
