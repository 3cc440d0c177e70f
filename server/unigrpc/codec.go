package unigrpc

import (
	"fmt"

	"google.golang.org/grpc/mem"
)

// rawPush is a push the engine encoded already: the protobuf bytes of one
// client protocol Push, without the length prefix of its frame.
type rawPush []byte

// vtUnmarshaler is what the generated vtprotobuf code gives every message
// of unistreampb: unmarshal without reflection.
type vtUnmarshaler interface {
	UnmarshalVT([]byte) error
}

// codec is the uni_grpc server's only codec. Pushes leave as the bytes the
// engine encoded once per publication and shared between subscribers, so
// nothing is marshaled per push; the ConnectRequest is read with the
// generated vtprotobuf code. It keeps gRPC's "proto" name, so clients see
// the usual content type.
type codec struct{}

// Marshal copies a raw push into a buffer of gRPC's pool, which gRPC frees
// once it is written: the frame the push was cut from is reused by the
// engine as soon as the write returns, while gRPC writes later, from its
// own goroutine. The server sends nothing else.
func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(rawPush)
	if !ok {
		return nil, fmt.Errorf("unigrpc: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.Copy(m, mem.DefaultBufferPool())}, nil
}

// Unmarshal decodes a message of unistreampb. The generated code copies
// bytes and strings out of data, which gRPC frees on return.
func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtUnmarshaler)
	if !ok {
		return fmt.Errorf("unigrpc: cannot unmarshal into %T", v)
	}
	var b []byte
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		b = buf.ReadOnlyData()
	}
	if err := m.UnmarshalVT(b); err != nil {
		return fmt.Errorf("unigrpc: unmarshal %T: %w", v, err)
	}
	return nil
}

func (codec) Name() string { return "proto" }
