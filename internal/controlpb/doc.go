// Package controlpb holds the generated protobuf types of the control
// messages nodes send each other through the broker. Regenerate with
// ./generate.sh after changing control.proto.
package controlpb
