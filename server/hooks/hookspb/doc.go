// Package hookspb holds the generated protobuf types and gRPC service
// gyre.hooks.v1.UserStatus, through which Gyre delivers user status
// events to a backend. Regenerate with ./generate.sh after changing
// hooks.proto.
package hookspb
