package protocol

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
)

var types = []Type{TypeJSON, TypeProtobuf}

func TestTypeString(t *testing.T) {
	for typ, want := range map[Type]string{TypeJSON: "json", TypeProtobuf: "protobuf", 7: "Type(7)"} {
		if got := typ.String(); got != want {
			t.Errorf("%d: got %q, want %q", typ, got, want)
		}
	}
}

func populated[T any, P interface {
	*T
	proto.Message
}](n int, sparse bool) []P {
	out := make([]P, n)
	p := populater{sparse: sparse}
	for i := range out {
		out[i] = P(new(T))
		p.fill(out[i].ProtoReflect(), 0)
	}
	return out
}

// frameRoundTrip encodes msgs one by one, joins them into a frame, decodes the frame
// and compares.
func frameRoundTrip[T any, P interface {
	*T
	proto.Message
}](t *testing.T, typ Type, msgs []P,
	appendFn func([]byte, Type, P) ([]byte, error),
	decodeFn func(Type, []byte, []P) ([]P, error),
) []byte {
	t.Helper()
	var parts [][]byte
	for _, m := range msgs {
		b, err := appendFn(nil, typ, m)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, b)
	}
	frame := JoinFrame(nil, typ, parts)
	existing := P(new(T))
	got, err := decodeFn(typ, frame, []P{existing})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(got) != len(msgs)+1 || got[0] != existing {
		t.Fatalf("decoded %d messages, want %d appended to dst", len(got), len(msgs)+1)
	}
	for i, m := range msgs {
		if !proto.Equal(got[i+1], m) {
			t.Fatalf("message %d: got %v\nwant %v", i, got[i+1], m)
		}
	}
	return frame
}

func TestFrameRoundTrip(t *testing.T) {
	for _, typ := range types {
		for _, sparse := range []bool{false, true} {
			mode := "full"
			if sparse {
				mode = "sparse"
			}
			t.Run(typ.String()+"/"+mode, func(t *testing.T) {
				frameRoundTrip(t, typ, populated[Command](3, sparse), AppendCommand, DecodeCommands)
				frameRoundTrip(t, typ, populated[Reply](3, sparse), AppendReply, DecodeReplies)
				frameRoundTrip(t, typ, populated[Push](3, sparse), AppendPush, DecodePushes)
			})
		}
	}
}

// TestProtobufFramesMatchReflection checks the vtprotobuf output against the reflection
// based implementation, which is independent of the generated fast paths.
func TestProtobufFramesMatchReflection(t *testing.T) {
	replies := populated[Reply](4, false)
	var frame []byte
	for _, r := range replies {
		var err error
		if frame, err = AppendReply(frame, TypeProtobuf, r); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range replies {
		size, n := binary.Uvarint(frame)
		if n <= 0 || size > uint64(len(frame)-n) {
			t.Fatalf("reply %d: bad length prefix", i)
		}
		got := new(Reply)
		if err := proto.Unmarshal(frame[n:n+int(size)], got); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("reply %d differs", i)
		}
		frame = frame[n+int(size):]
	}
	cmd := populated[Command](1, false)[0]
	data, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCommand(TypeProtobuf, data)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, cmd) {
		t.Fatal("command marshalled by reflection decodes differently")
	}
}

func TestUnframedRoundTrip(t *testing.T) {
	for _, typ := range types {
		t.Run(typ.String(), func(t *testing.T) {
			cmd := populated[Command](1, false)[0]
			data, err := EncodeCommand(typ, cmd)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeCommand(typ, data)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, cmd) {
				t.Fatal("command round trip differs")
			}
			emu := &EmulationRequest{Node: "n1", Session: "s1", Data: []byte(`{"id":1}`)}
			data, err = EncodeEmulationRequest(typ, emu)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeEmulationRequest(typ, data)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(back, emu) {
				t.Fatalf("emulation request: got %v, want %v", back, emu)
			}
		})
	}
}

func TestPingPong(t *testing.T) {
	tests := []struct {
		typ   Type
		frame string
		pongs int
	}{
		{TypeJSON, `{}`, 1},
		{TypeJSON, "{}\n{}", 2},
		{TypeJSON, " { } \r\n", 1},
		{TypeProtobuf, "\x00", 1},
		{TypeProtobuf, "\x00\x00\x00", 3},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String()+"/"+tt.frame, func(t *testing.T) {
			cmds, err := DecodeCommands(tt.typ, []byte(tt.frame), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(cmds) != tt.pongs {
				t.Fatalf("got %d commands, want %d", len(cmds), tt.pongs)
			}
			for _, c := range cmds {
				if !proto.Equal(c, &Command{}) {
					t.Fatalf("pong decoded as %v", c)
				}
			}
		})
	}
	for typ, want := range map[Type]string{TypeJSON: "{}", TypeProtobuf: "\x00"} {
		for _, r := range []*Reply{{}, nil} {
			got, err := AppendReply([]byte("x"), typ, r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "x"+want {
				t.Errorf("%s ping: got %q, want %q", typ, got, "x"+want)
			}
		}
	}
	if c, err := DecodeCommand(TypeProtobuf, nil); err != nil || !proto.Equal(c, &Command{}) {
		t.Errorf("empty protobuf command: %v, %v", c, err)
	}
}

func TestJSONFrameSeparators(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		ids   []uint32
	}{
		{"empty frame", "", nil},
		{"whitespace only", " \r\n\n\t", nil},
		{"single", `{"id":1}`, []uint32{1}},
		{"trailing newline", "{\"id\":1}\n", []uint32{1}},
		{"crlf", "{\"id\":1}\r\n{\"id\":2}\r\n", []uint32{1, 2}},
		{"empty lines", "\n{\"id\":1}\n\n\n{\"id\":2}\n", []uint32{1, 2}},
		{"pretty printed", "{\n  \"id\": 1\n}\n{\n  \"id\": 2\n}", []uint32{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmds, err := DecodeCommands(TypeJSON, []byte(tt.frame), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(cmds) != len(tt.ids) {
				t.Fatalf("got %d commands, want %d", len(cmds), len(tt.ids))
			}
			for i, c := range cmds {
				if c.Id != tt.ids[i] {
					t.Errorf("command %d: id %d, want %d", i, c.Id, tt.ids[i])
				}
			}
		})
	}
}

func TestJoinFrame(t *testing.T) {
	msgs := [][]byte{[]byte("a"), []byte("bc"), []byte("d")}
	if got := string(JoinFrame([]byte(">"), TypeJSON, msgs)); got != ">a\nbc\nd" {
		t.Errorf("json: %q", got)
	}
	if got := string(JoinFrame([]byte(">"), TypeProtobuf, msgs)); got != ">abcd" {
		t.Errorf("protobuf: %q", got)
	}
	if got := JoinFrame[[]byte](nil, TypeJSON, nil); len(got) != 0 {
		t.Errorf("empty: %q", got)
	}
}

func TestJSONMessages(t *testing.T) {
	tests := []struct {
		frame string
		want  []string
	}{
		{"", nil},
		{`{"a":1}`, []string{`{"a":1}`}},
		{"a\nbc\nd", []string{"a", "bc", "d"}},
		{"a\n\nb\n", []string{"a", "", "b"}},
		{"\n", []string{""}},
	}
	for _, tt := range tests {
		var got []string
		for m := range JSONMessages([]byte(tt.frame)) {
			got = append(got, string(m))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: %q, want %q", tt.frame, got, tt.want)
		}
	}
	// What JoinFrame joins, JSONMessages splits; a caller may stop early.
	msgs := []string{`{"id":1}`, `{"id":2}`, `{"id":3}`}
	var got []string
	for m := range JSONMessages(JoinFrame(nil, TypeJSON, msgs)) {
		if got = append(got, string(m)); len(got) == 2 {
			break
		}
	}
	if !slices.Equal(got, msgs[:2]) {
		t.Errorf("round trip with an early stop: %q", got)
	}
}

func TestMalformedJSON(t *testing.T) {
	tests := []struct{ name, frame string }{
		{"open brace", `{`},
		{"unterminated object", `{"id":1`},
		{"trailing comma", `{"id":1,}`},
		{"leading comma", `{,"id":1}`},
		{"missing colon", `{"id" 1}`},
		{"missing comma", `{"id":1 "ping":{}}`},
		{"unquoted key", `{id:1}`},
		{"array command", `[]`},
		{"number command", `1`},
		{"string command", `"x"`},
		{"null command", `null`},
		{"garbage after object", `{"id":1}x`},
		{"truncated second", "{\"id\":1}\n{\"id\""},
		{"bad literal", `{"subscribe":{"recover":tru}}`},
		{"message as array", `{"connect":[]}`},
		{"message as string", `{"connect":"x"}`},
		{"string as number", `{"subscribe":{"channel":1}}`},
		{"bool as string", `{"subscribe":{"recover":"true"}}`},
		{"bool as number", `{"subscribe":{"recover":1}}`},
		{"map as array", `{"connect":{"subs":[]}}`},
		{"map value type", `{"connect":{"headers":{"a":1}}}`},
		{"map message value type", `{"connect":{"subs":{"a":1}}}`},
		{"list element type", `{"subscribe":{"tf":{"vals":[1]}}}`},
		{"list null element", `{"subscribe":{"tf":{"nodes":[null]}}}`},
		{"list as object", `{"subscribe":{"tf":{"nodes":{}}}}`},
		{"invalid utf8", "{\"subscribe\":{\"channel\":\"\xff\"}}"},
		{"invalid utf8 key", "{\"\xff\":1}"},
		{"control char", "{\"subscribe\":{\"channel\":\"a\nb\"}}"},
		{"bad escape", `{"subscribe":{"channel":"\x"}}`},
		{"short unicode escape", `{"subscribe":{"channel":"\u12"}}`},
		{"bad hex escape", `{"subscribe":{"channel":"\u12g4"}}`},
		{"unterminated string", `{"subscribe":{"channel":"abc`},
		{"missing value", `{"send":{"data":}}`},
		{"raw trailing comma", `{"send":{"data":[1,]}}`},
		{"raw key without value", `{"send":{"data":{"a"}}}`},
		{"raw leading zero", `{"send":{"data":01}}`},
		{"raw bare dot", `{"send":{"data":1.}}`},
		{"raw bare minus", `{"send":{"data":-}}`},
		{"raw bare exponent", `{"send":{"data":1e}}`},
		{"raw short null", `{"send":{"data":nul}}`},
		{"raw invalid utf8", "{\"send\":{\"data\":\"\xc3\"}}"},
		{"raw unterminated", `{"send":{"data":{"a":[1,2`},
		{"unknown field bad value", `{"x":[1,}`},
		{"binary garbage", "\x00\x01\x02\xff"},
		{"nul byte in object", "{\x00}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmds, err := DecodeCommands(TypeJSON, []byte(tt.frame), nil)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, %v; want ErrMalformed", cmds, err)
			}
		})
	}
}

func TestMalformedProtobuf(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		valid int // commands decoded before the bad one
	}{
		{"truncated varint", []byte{0x80}, 0},
		{"overlong varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0},
		{"length past end", []byte{0x05, 0x08, 0x01}, 0},
		{"huge length", binary.AppendUvarint(nil, 1<<62), 0},
		{"truncated field", []byte{0x01, 0x08}, 0},
		{"wrong wire type", []byte{0x02, 0x0a, 0x00}, 0},
		{"end group", []byte{0x01, 0x0c}, 0},
		{"field zero", []byte{0x02, 0x00, 0x01}, 0},
		{"nested length past end", []byte{0x03, 0x22, 0x05, 0x0a}, 0},
		{"garbage", []byte{0x04, 0xff, 0xff, 0xff, 0xff}, 0},
		{"good then bad", []byte{0x02, 0x08, 0x07, 0x80}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmds, err := DecodeCommands(TypeProtobuf, tt.frame, nil)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, %v; want ErrMalformed", cmds, err)
			}
			if len(cmds) != tt.valid {
				t.Fatalf("got %d commands before the error, want %d", len(cmds), tt.valid)
			}
		})
	}
}

func TestUnknownType(t *testing.T) {
	const bad Type = 9
	checks := map[string]error{}
	_, checks["DecodeCommands"] = DecodeCommands(bad, []byte("{}"), nil)
	_, checks["DecodeCommand"] = DecodeCommand(bad, []byte("{}"))
	_, checks["DecodeReplies"] = DecodeReplies(bad, []byte("{}"), nil)
	_, checks["AppendReply"] = AppendReply(nil, bad, &Reply{})
	_, checks["AppendPush"] = AppendPush(nil, bad, &Push{})
	_, checks["AppendCommand"] = AppendCommand(nil, bad, &Command{})
	_, checks["EncodeCommand"] = EncodeCommand(bad, &Command{})
	for name, err := range checks {
		if !errors.Is(err, ErrUnknownType) {
			t.Errorf("%s: got %v, want ErrUnknownType", name, err)
		}
	}
}
