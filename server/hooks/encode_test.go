package hooks

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "chat:index", "a\"b\\c", "\x00\x1f\t\r\n", "é中😀", "\u2028\u2029", "\xff\xfe", "a\xc3", "</script>&"} {
		checkString(t, s)
	}
}

// checkString fails t unless appendString writes s as JSON that reads back
// as what encoding/json would have written.
func checkString(t *testing.T, s string) {
	t.Helper()
	got := appendString(nil, s)
	var back string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("%q encoded as %s: %v", s, got, err)
	}
	std, _ := json.Marshal(s)
	var want string
	_ = json.Unmarshal(std, &want)
	if back != want {
		t.Fatalf("%q: decoded %q, want %q", s, back, want)
	}
}

// Whatever a channel name or ID holds, the body is JSON that reads back
// as encoding/json would have written it.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "chat:index", "a\"b\\c\n", "\u2028", "\xff", "é😀\x00"} {
		f.Add(s)
	}
	f.Fuzz(checkString)
}

// Info that is JSON goes raw, other info as b64info; either way the body
// is JSON.
func FuzzAppendBody(f *testing.F) {
	f.Add("id", "42", []byte(`{"a":1}`), false)
	f.Add("id", "42", []byte{0xff}, false)
	f.Add("", "", []byte(nil), true)
	f.Fuzz(func(t *testing.T, id, key string, info []byte, b64 bool) {
		body := appendBody(nil, KindUser, []Event{{ID: id, Kind: KindUser, Key: key, Type: TypeOnline, TimeMs: -1, Info: info}}, b64)
		var env struct {
			Events []gotEvent `json:"events"`
		}
		if err := json.Unmarshal(body, &env); err != nil || len(env.Events) != 1 {
			t.Fatalf("body %s: %v", body, err)
		}
		e := env.Events[0]
		if len(info) > 0 && (e.Info == nil) == (e.B64Info == "") {
			t.Fatalf("body %s: want exactly one of info and b64info", body)
		}
		if e.TimeMs != -1 || e.Type != TypeOnline {
			t.Fatalf("body %s", body)
		}
	})
}

// batch is n events as the occupancy trackers make them.
func batch(kind Kind, n int) []Event {
	evs := make([]Event, n)
	for i := range evs {
		e := Event{
			ID: "c1f3e0a2-" + strconv.Itoa(1000+i), Kind: kind, TimeMs: 1_697_206_286_533 + int64(i),
		}
		if kind == KindChannel {
			e.Key, e.Type = "chat:room-"+strconv.Itoa(i), TypeOccupied
		} else {
			e.Key, e.Type, e.Info = strconv.Itoa(100000+i), TypeOnline, json.RawMessage(`{"name":"User `+strconv.Itoa(i)+`","roles":["member"]}`)
		}
		evs[i] = e
	}
	return evs
}

// BenchmarkEncode measures the encoding of a batch of 100 events: the
// HTTP JSON body, and the gRPC request built and marshalled as the gRPC
// codec does it (proto.Marshal).
func BenchmarkEncode(b *testing.B) {
	channels, users := batch(KindChannel, 100), batch(KindUser, 100)
	b.Run("http/channel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body := appendBody(make([]byte, 0, bodySize(channels)), KindChannel, channels, false)
			b.SetBytes(int64(len(body)))
		}
	})
	b.Run("http/user", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body := appendBody(make([]byte, 0, bodySize(users)), KindUser, users, false)
			b.SetBytes(int64(len(body)))
		}
	})
	b.Run("http/channel-signed", func(b *testing.B) {
		b.ReportAllocs()
		secret := []byte("0123456789abcdef0123456789abcdef")
		for b.Loop() {
			body := appendBody(make([]byte, 0, bodySize(channels)), KindChannel, channels, false)
			_ = sign(secret, benchTime, body)
			b.SetBytes(int64(len(body)))
		}
	})
	b.Run("grpc/channel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := proto.Marshal(channelRequest(channels))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
		}
	})
	b.Run("grpc/user", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := proto.Marshal(userRequest(users))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
		}
	})
}

var benchTime = time.Unix(1_697_206_287, 0)
