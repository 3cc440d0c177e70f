// Package wirepb holds the generated protobuf type of the messages Gyre
// nodes exchange through Redis pub/sub. Regenerate with ./generate.sh after
// changing redis_wire.proto. The file's name is global in the protobuf
// registry, so it differs from the NATS broker's wire.proto: a program
// linking both brokers would otherwise panic at start.
package wirepb
