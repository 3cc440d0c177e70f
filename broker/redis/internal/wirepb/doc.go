// Package wirepb holds the generated protobuf type of the messages Gyre
// nodes exchange through Redis pub/sub. Regenerate with ./generate.sh after
// changing wire.proto.
package wirepb
