package protocol

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

func TestJSONCodecCoversEveryMessage(t *testing.T) {
	msgs := File_client_proto.Messages()
	for i := 0; i < msgs.Len(); i++ {
		if _, ok := jsonCodecs[msgs.Get(i).Name()]; !ok {
			t.Errorf("message %s has no JSON codec", msgs.Get(i).Name())
		}
	}
	if len(jsonCodecs) != msgs.Len() {
		t.Errorf("%d codecs for %d messages", len(jsonCodecs), msgs.Len())
	}
}

func newMessage(t *testing.T, name protoreflect.Name) proto.Message {
	t.Helper()
	md := File_client_proto.Messages().ByName(name)
	if md == nil {
		t.Fatalf("no message %s", name)
	}
	mt, err := protoregistryFind(md)
	if err != nil {
		t.Fatal(err)
	}
	return mt
}

func TestJSONRoundTripEveryMessage(t *testing.T) {
	for name, codec := range jsonCodecs {
		for _, sparse := range []bool{false, true} {
			mode := "full"
			if sparse {
				mode = "sparse"
			}
			t.Run(string(name)+"/"+mode, func(t *testing.T) {
				m := newMessage(t, name)
				p := populater{sparse: sparse}
				p.fill(m.ProtoReflect(), 0)
				data := codec.encode([]byte("prefix"), m)
				if !strings.HasPrefix(string(data), "prefix") {
					t.Fatalf("encoder clobbered dst: %q", data)
				}
				data = data[len("prefix"):]
				checkJSON(t, data, m.ProtoReflect())
				got, err := codec.decode(data)
				if err != nil {
					t.Fatalf("decode %s: %v", data, err)
				}
				if !proto.Equal(got, m) {
					t.Fatalf("round trip differs\n got: %v\nwant: %v\njson: %s", got, m, data)
				}
			})
		}
	}
}

func TestJSONEmptyMessages(t *testing.T) {
	for name, codec := range jsonCodecs {
		t.Run(string(name), func(t *testing.T) {
			m := newMessage(t, name)
			if got, want := string(codec.encode(nil, m)), emptyJSON(m.ProtoReflect().Descriptor()); got != want {
				t.Fatalf("empty %s encodes as %s, want %s", name, got, want)
			}
			got, err := codec.decode([]byte(" { } "))
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, m) {
				t.Fatalf("decoded %v, want empty", got)
			}
		})
	}
}

func TestJSONStringEncoding(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "chat:index", `"chat:index"`},
		{"empty", "", `""`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short escapes", "\n\r\t\b\f", `"\n\r\t\b\f"`},
		{"other control", "\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"del passes", "\x7f", "\"\x7f\""},
		{"slash and html pass", "</a>&", `"</a>&"`},
		{"utf8 passes", "é☃😀", `"é☃😀"`},
		{"line separators", "\u2028\u2029", `"\u2028\u2029"`},
		{"invalid byte", "a\xffb", `"a\ufffdb"`},
		{"truncated rune", "\xe2\x98", `"\ufffd\ufffd"`},
		{"surrogate encoded", "\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendJSONString(nil, tt.in)); got != tt.want {
				t.Errorf("string: got %s, want %s", got, tt.want)
			}
			if got := string(AppendJSONString(nil, []byte(tt.in))); got != tt.want {
				t.Errorf("bytes: got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestJSONStringDecoding(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", `"chat"`, "chat"},
		{"short escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{"unicode escape", `"\u00e9\u2603"`, "é☃"},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"upper hex", `"\u00E9"`, "é"},
		{"lone high surrogate", `"\ud83dx"`, "\ufffdx"},
		{"lone low surrogate", `"\ude00"`, "\ufffd"},
		{"high then non-low", `"\ud83d\u0041"`, "\ufffdA"},
		{"raw utf8", `"é☃😀"`, "é☃😀"},
		{"null", `null`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r jsonReader
			r.reset([]byte(tt.in))
			got := r.str()
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestJSONKeyEscapes(t *testing.T) {
	c, err := DecodeCommand(TypeJSON, []byte(`{"\u0069d":7,"sub\u005frefresh":{"channel":"c"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Id != 7 || c.SubRefresh.GetChannel() != "c" {
		t.Fatalf("escaped keys not matched: %v", c)
	}
}

func TestJSONIntegers(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
		bad  bool
	}{
		{"u32 max", `{"id":4294967295}`, uint32(4294967295), false},
		{"u32 over", `{"id":4294967296}`, nil, true},
		{"u32 negative", `{"id":-1}`, nil, true},
		{"u32 minus zero", `{"id":-0}`, uint32(0), false},
		{"u32 fraction", `{"id":1.5}`, nil, true},
		{"u32 integral fraction", `{"id":1.0}`, nil, true},
		{"u32 exponent", `{"id":1e2}`, nil, true},
		{"u32 quoted", `{"id":"1"}`, nil, true},
		{"u32 leading zero", `{"id":01}`, nil, true},
		{"u32 null", `{"id":null}`, uint32(0), false},
		{"u32 plus", `{"id":+1}`, nil, true},
		{"u32 huge", `{"id":123456789012345678901234567890}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := DecodeCommand(TypeJSON, []byte(tt.in))
			if tt.bad {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("got %v, %v; want ErrMalformed", c, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Id != tt.want {
				t.Fatalf("got %d, want %v", c.Id, tt.want)
			}
		})
	}
}

func TestJSONWideIntegers(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *Push
		bad  bool
	}{
		{"i64 min", `{"id":-9223372036854775808}`, &Push{Id: -1 << 63}, false},
		{"i64 max", `{"id":9223372036854775807}`, &Push{Id: 1<<63 - 1}, false},
		{"i64 over", `{"id":9223372036854775808}`, nil, true},
		{"i64 under", `{"id":-9223372036854775809}`, nil, true},
		{"u64 max", `{"pub":{"offset":18446744073709551615}}`, &Push{Pub: &Publication{Offset: 1<<64 - 1}}, false},
		{"u64 over", `{"pub":{"offset":18446744073709551616}}`, nil, true},
		{"i64 time", `{"pub":{"time":-5}}`, &Push{Pub: &Publication{Time: -5}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodePush(TypeJSON, []byte(tt.in))
			if tt.bad {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("got %v, %v; want ErrMalformed", p, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(p, tt.want) {
				t.Fatalf("got %v, want %v", p, tt.want)
			}
		})
	}
}

func TestJSONRawData(t *testing.T) {
	for _, raw := range append(rawSamples, `"\ud83d\ude00"`, `0`, `-0.0e0`, `[[[[]]]]`) {
		t.Run(raw, func(t *testing.T) {
			frame := []byte(`{"publish":{"data":` + raw + ` ,"channel":"c"}}`)
			c, err := DecodeCommand(TypeJSON, frame)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(c.Publish.Data); got != raw {
				t.Fatalf("data %q, want %q", got, raw)
			}
			// The decoded bytes are a copy: the frame buffer is reused by transports.
			for i := range frame {
				frame[i] = 'x'
			}
			if got := string(c.Publish.Data); got != raw {
				t.Fatalf("data aliases the frame: %q", got)
			}
		})
	}
}

func TestJSONNullLeavesFieldsUnset(t *testing.T) {
	c, err := DecodeCommand(TypeJSON, []byte(`{"id":null,"connect":null,"subscribe":{"channel":null,"recover":null,"tf":null},"history":{"since":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Command{Subscribe: &SubscribeRequest{}, History: &HistoryRequest{}}
	if !proto.Equal(c, want) {
		t.Fatalf("got %v, want %v", c, want)
	}
}

func TestJSONUnknownFieldsIgnored(t *testing.T) {
	in := `{"id":3,"future":{"a":[1,{"b":"c"}],"d":null},"method":4,"publish":{"channel":"c","x":true,"y":"\u00e9"},"z":-1.5e3}`
	c, err := DecodeCommand(TypeJSON, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &Command{Id: 3, Publish: &PublishRequest{Channel: "c"}}
	if !proto.Equal(c, want) {
		t.Fatalf("got %v, want %v", c, want)
	}
}

func TestJSONDuplicateKeysLastWins(t *testing.T) {
	c, err := DecodeCommand(TypeJSON, []byte(`{"id":1,"id":2,"connect":{"subs":{"a":{}}},"connect":{"subs":{"b":{}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Command{Id: 2, Connect: &ConnectRequest{Subs: map[string]*SubscribeRequest{"b": {}}}}
	if !proto.Equal(c, want) {
		t.Fatalf("got %v, want %v", c, want)
	}
}

func TestJSONMapNullValues(t *testing.T) {
	r, err := DecodeReply(TypeJSON, []byte(`{"presence":{"presence":{"c1":null,"c2":{"user":"u"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Reply{Presence: &PresenceResult{Presence: map[string]*ClientInfo{"c1": {}, "c2": {User: "u"}}}}
	if !proto.Equal(r, want) {
		t.Fatalf("got %v, want %v", r, want)
	}
}

func TestJSONMapKeysSorted(t *testing.T) {
	tags := map[string]string{}
	for _, k := range []string{"m", "b", "z", "a", "é", "A"} {
		tags[k] = k
	}
	got := string(appendPublicationJSON(nil, &Publication{Tags: tags}))
	want := `{"tags":{"A":"A","a":"a","b":"b","m":"m","z":"z","é":"é"}}`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	// Past the stack buffer the keys are still sorted.
	big := map[string]string{}
	for i := range smallMap + 5 {
		big[string(rune('a'+i))] = ""
	}
	out := string(appendPublicationJSON(nil, &Publication{Tags: big}))
	if !strings.HasPrefix(out, `{"tags":{"a":"","b":"","c":""`) || !strings.HasSuffix(out, `"u":""}}`) {
		t.Fatalf("large map not sorted: %s", out)
	}
}

func TestJSONDepthLimit(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat(`{"nodes":[`, n) + `{}` + strings.Repeat(`]}`, n)
	}
	for _, tt := range []struct {
		name  string
		depth int
		bad   bool
	}{
		{"shallow", 10, false},
		{"deep", DefaultMaxJSONDepth, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCommand(TypeJSON, []byte(`{"subscribe":{"tf":`+nest(tt.depth)+`}}`))
			if tt.bad != (err != nil) {
				t.Fatalf("depth %d: err %v", tt.depth, err)
			}
			_, err = DecodeCommand(TypeJSON, []byte(`{"send":{"data":`+strings.Repeat("[", tt.depth)+strings.Repeat("]", tt.depth)+`}}`))
			if tt.bad != (err != nil) {
				t.Fatalf("raw depth %d: err %v", tt.depth, err)
			}
		})
	}
}

// TestCommandDecoderMaxJSONDepth: a decoder's own bound replaces the
// default, lower or higher.
func TestCommandDecoderMaxJSONDepth(t *testing.T) {
	raw := func(n int) []byte {
		return []byte(`{"send":{"data":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`)
	}
	low := CommandDecoder{MaxJSONDepth: 4}
	if _, err := low.DecodeCommand(TypeJSON, raw(2)); err != nil {
		t.Fatalf("depth 2 under 4: %v", err)
	}
	if _, err := low.DecodeCommands(TypeJSON, raw(5), nil); err == nil {
		t.Fatal("depth 5 passed a bound of 4")
	}
	high := CommandDecoder{MaxJSONDepth: 1000}
	if _, err := high.DecodeCommand(TypeJSON, raw(DefaultMaxJSONDepth+10)); err != nil {
		t.Fatalf("depth %d under 1000: %v", DefaultMaxJSONDepth+10, err)
	}
}

// protoregistryFind returns a new empty message of the described type.
func protoregistryFind(md protoreflect.MessageDescriptor) (proto.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	if err != nil {
		return nil, err
	}
	return mt.New().Interface(), nil
}

func TestUnquoteJSONString(t *testing.T) {
	tests := []struct {
		name, in, want string
		bad            bool
	}{
		{"plain", `"abc"`, "abc", false},
		{"empty", `""`, "", false},
		{"command frame", `"{\"id\":1}\n{\"id\":2,\"ping\":{}}"`, "{\"id\":1}\n{\"id\":2,\"ping\":{}}", false},
		{"surrounding space", " \"x\" \n", "x", false},
		{"not a string", `{"id":1}`, "", true},
		{"null", `null`, "", true},
		{"trailing data", `"a"b`, "", true},
		{"unterminated", `"abc`, "", true},
		{"bad escape", `"\q"`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := UnquoteJSONString([]byte(tt.in))
			if tt.bad {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("got %q, %v; want ErrMalformed", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if back := string(AppendJSONString(nil, got)); strings.TrimSpace(tt.in) != back {
				t.Fatalf("AppendJSONString gives %s, want %s", back, tt.in)
			}
		})
	}
}

func TestSkipPlainWords(t *testing.T) {
	specials := []byte{'"', '\\', 0x00, 0x01, 0x1f, 0x80, 0xc3, 0xff}
	plain := []byte{' ', '!', '#', '[', ']', 'a', '~', 0x7f}
	for p := range 24 {
		for _, c := range specials {
			data := []byte(strings.Repeat("a", 24))
			data[p] = c
			if got := skipPlainWords(data, 0); got > p {
				t.Errorf("byte %#x at %d skipped (stopped at %d)", c, p, got)
			}
		}
		for _, c := range plain {
			data := []byte(strings.Repeat("a", 24))
			data[p] = c
			if got := skipPlainWords(data, 0); got != 24 {
				t.Errorf("plain byte %#x at %d stopped the scan at %d", c, p, got)
			}
		}
	}
	if got := skipPlainWords([]byte("abcdefghijk"), 0); got != 8 {
		t.Errorf("tail shorter than a word: stopped at %d, want 8", got)
	}
}

// TestJSONEmptyPresence: the presence map is on the wire also when empty,
// as centrifuge-js reads it as the presence's clients.
func TestJSONEmptyPresence(t *testing.T) {
	for _, m := range []*PresenceResult{{}, {Presence: map[string]*ClientInfo{}}} {
		if got := string(appendPresenceResultJSON(nil, m)); got != `{"presence":{}}` {
			t.Errorf("empty presence encoded as %s", got)
		}
	}
	got := string(appendPresenceResultJSON(nil, &PresenceResult{Presence: map[string]*ClientInfo{"c": {User: "u"}}}))
	if got != `{"presence":{"c":{"user":"u","client":""}}}` {
		t.Errorf("presence encoded as %s", got)
	}
}
