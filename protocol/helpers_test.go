package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// jsonCodec gives the tests uniform access to the JSON encoder and decoder of one
// message type.
type jsonCodec struct {
	encode func([]byte, proto.Message) []byte
	decode func([]byte) (proto.Message, error)
}

func codecOf[T any, P interface {
	*T
	proto.Message
}](enc func([]byte, *T) []byte, dec func(*jsonReader, *T)) jsonCodec {
	return jsonCodec{
		encode: func(b []byte, m proto.Message) []byte { return enc(b, m.(P)) },
		decode: func(data []byte) (proto.Message, error) {
			var r jsonReader
			r.reset(data)
			if r.peek() != '{' {
				r.fail("expected object")
				return nil, r.err
			}
			m := readMessage(&r, dec)
			if r.peek(); r.err == nil && r.pos != len(data) {
				r.fail("data after message")
			}
			if r.err != nil {
				return nil, r.err
			}
			return P(m), nil
		},
	}
}

// jsonCodecs lists every message of client.proto; TestJSONCodecCoversEveryMessage
// fails when a message is added without its codec.
var jsonCodecs = map[protoreflect.Name]jsonCodec{
	"Command":              codecOf(appendCommandJSON, decodeCommandJSON),
	"ConnectRequest":       codecOf(appendConnectRequestJSON, decodeConnectRequestJSON),
	"SubscribeRequest":     codecOf(appendSubscribeRequestJSON, decodeSubscribeRequestJSON),
	"FilterNode":           codecOf(appendFilterNodeJSON, decodeFilterNodeJSON),
	"UnsubscribeRequest":   codecOf(appendUnsubscribeRequestJSON, decodeUnsubscribeRequestJSON),
	"PublishRequest":       codecOf(appendPublishRequestJSON, decodePublishRequestJSON),
	"PresenceRequest":      codecOf(appendPresenceRequestJSON, decodePresenceRequestJSON),
	"PresenceStatsRequest": codecOf(appendPresenceStatsRequestJSON, decodePresenceStatsRequestJSON),
	"HistoryRequest":       codecOf(appendHistoryRequestJSON, decodeHistoryRequestJSON),
	"StreamPosition":       codecOf(appendStreamPositionJSON, decodeStreamPositionJSON),
	"PingRequest":          codecOf(appendPingRequestJSON, decodePingRequestJSON),
	"SendRequest":          codecOf(appendSendRequestJSON, decodeSendRequestJSON),
	"RPCRequest":           codecOf(appendRPCRequestJSON, decodeRPCRequestJSON),
	"RefreshRequest":       codecOf(appendRefreshRequestJSON, decodeRefreshRequestJSON),
	"SubRefreshRequest":    codecOf(appendSubRefreshRequestJSON, decodeSubRefreshRequestJSON),
	"EmulationRequest":     codecOf(appendEmulationRequestJSON, decodeEmulationRequestJSON),
	"TrackBatch":           codecOf(appendTrackBatchJSON, decodeTrackBatchJSON),
	"KeyedItem":            codecOf(appendKeyedItemJSON, decodeKeyedItemJSON),
	"Reply":                codecOf(appendReplyJSON, decodeReplyJSON),
	"Error":                codecOf(appendErrorJSON, decodeErrorJSON),
	"ConnectResult":        codecOf(appendConnectResultJSON, decodeConnectResultJSON),
	"SubscribeResult":      codecOf(appendSubscribeResultJSON, decodeSubscribeResultJSON),
	"Dictionary":           codecOf(appendDictionaryJSON, decodeDictionaryJSON),
	"UnsubscribeResult":    codecOf(appendUnsubscribeResultJSON, decodeUnsubscribeResultJSON),
	"PublishResult":        codecOf(appendPublishResultJSON, decodePublishResultJSON),
	"PresenceResult":       codecOf(appendPresenceResultJSON, decodePresenceResultJSON),
	"PresenceStatsResult":  codecOf(appendPresenceStatsResultJSON, decodePresenceStatsResultJSON),
	"HistoryResult":        codecOf(appendHistoryResultJSON, decodeHistoryResultJSON),
	"PingResult":           codecOf(appendPingResultJSON, decodePingResultJSON),
	"RPCResult":            codecOf(appendRPCResultJSON, decodeRPCResultJSON),
	"RefreshResult":        codecOf(appendRefreshResultJSON, decodeRefreshResultJSON),
	"SubRefreshResult":     codecOf(appendSubRefreshResultJSON, decodeSubRefreshResultJSON),
	"Push":                 codecOf(appendPushJSON, decodePushJSON),
	"ClientInfo":           codecOf(appendClientInfoJSON, decodeClientInfoJSON),
	"Publication":          codecOf(appendPublicationJSON, decodePublicationJSON),
	"Join":                 codecOf(appendJoinJSON, decodeJoinJSON),
	"Leave":                codecOf(appendLeaveJSON, decodeLeaveJSON),
	"Unsubscribe":          codecOf(appendUnsubscribeJSON, decodeUnsubscribeJSON),
	"Message":              codecOf(appendMessageJSON, decodeMessageJSON),
	"Subscribe":            codecOf(appendSubscribeJSON, decodeSubscribeJSON),
	"Connect":              codecOf(appendConnectJSON, decodeConnectJSON),
	"Disconnect":           codecOf(appendDisconnectJSON, decodeDisconnectJSON),
	"Refresh":              codecOf(appendRefreshJSON, decodeRefreshJSON),
}

// rawSamples are the embedded JSON values bytes fields are filled with: every JSON type,
// escapes and non-ASCII included, with insignificant whitespace kept as sent.
var rawSamples = []string{
	`{"text":"hello","n":[1,2.5e-3,{"deep":null}]}`,
	`"a string with \"quotes\", \\ and \u00e9 and ☃"`,
	`[ 1 , -2 , true , false , null ]`,
	`-12.5E+7`,
	`true`,
	`null`,
	`{}`,
}

// stringSamples exercise the string encoder: escapes, non-ASCII, separators that
// JavaScript cannot hold raw.
var stringSamples = []string{
	"plain",
	"quote\" backslash\\ slash/",
	"ctl\n\r\t\b\f\x00\x1f",
	"é☃😀",
	"line\u2028sep\u2029",
	"<html>&amp;",
}

// populater fills every field of a message with a non-zero value, varying the values
// with a counter. With sparse set it skips every other field, to check that unset
// fields stay out of the JSON.
type populater struct {
	n      int
	sparse bool
}

func (p *populater) next() int { p.n++; return p.n }

func (p *populater) fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if p.sparse && p.next()%2 == 0 {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for _, k := range []string{"k1", stringSamples[p.next()%len(stringSamples)]} {
				mp.Set(protoreflect.ValueOfString(k).MapKey(), p.value(m, fd.MapValue(), depth, mp.NewValue))
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range 2 {
				l.Append(p.value(m, fd, depth, l.NewElement))
			}
		case fd.Kind() == protoreflect.MessageKind:
			if depth < 3 {
				m.Set(fd, p.value(m, fd, depth, func() protoreflect.Value { return m.NewField(fd) }))
			}
		default:
			m.Set(fd, p.value(m, fd, depth, nil))
		}
	}
}

func (p *populater) value(_ protoreflect.Message, fd protoreflect.FieldDescriptor, depth int, newMsg func() protoreflect.Value) protoreflect.Value {
	n := p.next()
	switch fd.Kind() {
	case protoreflect.MessageKind:
		v := newMsg()
		if depth < 3 {
			p.fill(v.Message(), depth+1)
		}
		return v
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(stringSamples[n%len(stringSamples)] + strconv.Itoa(n))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(rawSamples[n%len(rawSamples)]))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Uint32Kind:
		return protoreflect.ValueOfUint32(4_000_000_000 + uint32(n))
	case protoreflect.Uint64Kind:
		return protoreflect.ValueOfUint64(1<<63 + uint64(n))
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(-2_000_000_000 - int32(n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind:
		return protoreflect.ValueOfInt64(-1<<62 - int64(n))
	}
	panic(fmt.Sprintf("populate: kind %v of %s not handled", fd.Kind(), fd.FullName()))
}

// checkJSON compares encoded JSON, parsed by encoding/json, with the message it came
// from: every set field under its proto name with its value, nothing else. It is an
// oracle independent of the package's own decoder.
func checkJSON(t *testing.T, data []byte, m protoreflect.Message) {
	t.Helper()
	if !json.Valid(data) {
		t.Fatalf("invalid JSON: %s", data)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	if err := matchMessage(v, m); err != nil {
		t.Fatalf("%v\njson: %s", err, data)
	}
}

// alwaysPresent lists the fields the JSON encoder writes also when they hold
// their zero value (see appendStringFieldAlways), with that value as JSON.
var alwaysPresent = map[protoreflect.FullName]string{
	"centrifugal.centrifuge.protocol.ClientInfo.user":                 `""`,
	"centrifugal.centrifuge.protocol.ClientInfo.client":               `""`,
	"centrifugal.centrifuge.protocol.PresenceStatsResult.num_clients": `0`,
	"centrifugal.centrifuge.protocol.PresenceStatsResult.num_users":   `0`,
	"centrifugal.centrifuge.protocol.HistoryResult.publications":      `[]`,
	"centrifugal.centrifuge.protocol.HistoryResult.epoch":             `""`,
	"centrifugal.centrifuge.protocol.HistoryResult.offset":            `0`,
	"centrifugal.centrifuge.protocol.PresenceResult.presence":         `{}`,
}

// emptyJSON is how the encoder writes an empty message: {} but for the
// fields it always writes, in field order.
func emptyJSON(md protoreflect.MessageDescriptor) string {
	var members []string
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if v, ok := alwaysPresent[fd.FullName()]; ok {
			members = append(members, `"`+string(fd.Name())+`":`+v)
		}
	}
	return "{" + strings.Join(members, ",") + "}"
}

func matchMessage(v any, m protoreflect.Message) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: got %T, want object", m.Descriptor().Name(), v)
	}
	seen := 0
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); !m.Has(fd) {
			if _, ok := alwaysPresent[fd.FullName()]; ok {
				if _, in := obj[string(fd.Name())]; !in {
					return fmt.Errorf("%s: zero value missing from JSON", fd.FullName())
				}
				seen++
			}
		}
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		seen++
		jv, ok := obj[string(fd.Name())]
		if !ok {
			err = fmt.Errorf("%s: set field missing from JSON", fd.FullName())
			return false
		}
		if e := matchField(jv, fd, val); e != nil {
			err = fmt.Errorf("%s: %w", fd.FullName(), e)
			return false
		}
		return true
	})
	if err == nil && seen != len(obj) {
		err = fmt.Errorf("%s: JSON has %d members, message %d set fields", m.Descriptor().Name(), len(obj), seen)
	}
	return err
}

func matchField(v any, fd protoreflect.FieldDescriptor, val protoreflect.Value) error {
	switch {
	case fd.IsMap():
		obj, ok := v.(map[string]any)
		if !ok || len(obj) != val.Map().Len() {
			return fmt.Errorf("map mismatch: %v", v)
		}
		var err error
		val.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			err = matchScalar(obj[k.String()], fd.MapValue(), mv)
			return err == nil
		})
		return err
	case fd.IsList():
		arr, ok := v.([]any)
		if !ok || len(arr) != val.List().Len() {
			return fmt.Errorf("list mismatch: %v", v)
		}
		for i, e := range arr {
			if err := matchScalar(e, fd, val.List().Get(i)); err != nil {
				return err
			}
		}
		return nil
	}
	return matchScalar(v, fd, val)
}

func matchScalar(v any, fd protoreflect.FieldDescriptor, val protoreflect.Value) error {
	var want any
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return matchMessage(v, val.Message())
	case protoreflect.BytesKind:
		dec := json.NewDecoder(bytes.NewReader(val.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			return fmt.Errorf("raw value %q: %w", val.Bytes(), err)
		}
	case protoreflect.StringKind, protoreflect.BoolKind:
		want = val.Interface()
	default:
		want = json.Number(fmt.Sprint(val.Interface()))
	}
	if !reflect.DeepEqual(v, want) {
		return fmt.Errorf("got %#v, want %#v", v, want)
	}
	return nil
}
