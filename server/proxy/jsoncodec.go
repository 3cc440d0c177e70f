package proxy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The HTTP proxies send and read the proxy.proto messages as JSON the way
// Centrifugo does, which is not protojson: field names are the proto names
// (snake_case), bytes fields (data, info, meta) hold raw embedded JSON
// rather than base64, and 64-bit integers are plain numbers. The codec
// below walks the messages by reflection, so it covers every message of
// proxy.proto without a hand-written mirror of each.

// marshalJSON encodes m. A bytes field that is not valid JSON is an error:
// the caller puts such payloads into the b64 fields instead.
func marshalJSON(m protoreflect.Message) ([]byte, error) {
	var b bytes.Buffer
	if err := writeMessage(&b, m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeMessage(b *bytes.Buffer, m protoreflect.Message) error {
	b.WriteByte('{')
	first := true
	var err error
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeString(b, string(fd.Name()))
		b.WriteByte(':')
		v := m.Get(fd)
		switch {
		case fd.IsList():
			err = writeList(b, fd, v.List())
		case fd.IsMap():
			err = writeMap(b, fd, v.Map())
		default:
			err = writeValue(b, fd, v)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", fd.Name(), err)
		}
	}
	b.WriteByte('}')
	return nil
}

func writeList(b *bytes.Buffer, fd protoreflect.FieldDescriptor, l protoreflect.List) error {
	b.WriteByte('[')
	for i := range l.Len() {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeValue(b, fd, l.Get(i)); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

func writeMap(b *bytes.Buffer, fd protoreflect.FieldDescriptor, m protoreflect.Map) error {
	b.WriteByte('{')
	first := true
	var err error
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeString(b, k.String())
		b.WriteByte(':')
		err = writeValue(b, fd.MapValue(), v)
		return err == nil
	})
	b.WriteByte('}')
	return err
}

func writeValue(b *bytes.Buffer, fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return writeMessage(b, v.Message())
	case protoreflect.BytesKind:
		raw := v.Bytes()
		if !json.Valid(raw) {
			return fmt.Errorf("not valid JSON (%d bytes)", len(raw))
		}
		b.Write(raw)
	case protoreflect.StringKind:
		writeString(b, v.String())
	case protoreflect.BoolKind:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	default:
		return fmt.Errorf("unsupported kind %s", fd.Kind())
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	out, _ := json.Marshal(s) // a string always encodes
	b.Write(out)
}

// unmarshalJSON decodes data into m. Fields are matched by proto name or
// by JSON (lowerCamel) name; unknown ones are ignored, as Centrifugo
// ignores them; null leaves a field unset.
func unmarshalJSON(data []byte, m protoreflect.Message) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	if obj == nil {
		return fmt.Errorf("expected a JSON object")
	}
	fields := m.Descriptor().Fields()
	for key, raw := range obj {
		fd := fields.ByName(protoreflect.Name(key))
		if fd == nil {
			fd = fields.ByJSONName(key)
		}
		if fd == nil || isNull(raw) {
			continue
		}
		if err := readField(m, fd, raw); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func readField(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw json.RawMessage) error {
	switch {
	case fd.IsList():
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return err
		}
		l := m.Mutable(fd).List()
		for _, item := range items {
			v, err := readValue(fd, item, l.NewElement)
			if err != nil {
				return err
			}
			l.Append(v)
		}
	case fd.IsMap():
		var items map[string]json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return err
		}
		mm := m.Mutable(fd).Map()
		for k, item := range items {
			v, err := readValue(fd.MapValue(), item, mm.NewValue)
			if err != nil {
				return err
			}
			mm.Set(protoreflect.ValueOfString(k).MapKey(), v)
		}
	default:
		v, err := readValue(fd, raw, func() protoreflect.Value { return m.NewField(fd) })
		if err != nil {
			return err
		}
		m.Set(fd, v)
	}
	return nil
}

func readValue(fd protoreflect.FieldDescriptor, raw json.RawMessage, newValue func() protoreflect.Value) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		v := newValue()
		err := unmarshalJSON(raw, v.Message())
		return v, err
	case protoreflect.BytesKind:
		// Raw embedded JSON, kept as its bytes.
		return protoreflect.ValueOfBytes(bytes.Clone(bytes.TrimSpace(raw))), nil
	case protoreflect.StringKind:
		var s string
		err := json.Unmarshal(raw, &s)
		return protoreflect.ValueOfString(s), err
	case protoreflect.BoolKind:
		var x bool
		err := json.Unmarshal(raw, &x)
		return protoreflect.ValueOfBool(x), err
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := strconv.ParseInt(numberText(raw), 10, 32)
		return protoreflect.ValueOfInt32(int32(n)), err
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := strconv.ParseInt(numberText(raw), 10, 64)
		return protoreflect.ValueOfInt64(n), err
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := strconv.ParseUint(numberText(raw), 10, 32)
		return protoreflect.ValueOfUint32(uint32(n)), err
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := strconv.ParseUint(numberText(raw), 10, 64)
		return protoreflect.ValueOfUint64(n), err
	}
	return protoreflect.Value{}, fmt.Errorf("unsupported kind %s", fd.Kind())
}

// numberText accepts a JSON number, or a number in a string as protojson
// writes 64-bit integers.
func numberText(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// decodeB64 returns the bytes of a b64 field when it is set, else raw.
func decodeB64(b64 string, raw []byte) ([]byte, error) {
	if b64 == "" {
		return raw, nil
	}
	out, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("invalid base64: %w", err)
	}
	return out, nil
}
