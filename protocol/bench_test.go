package protocol

import (
	"strings"
	"testing"
)

// benchPush is a typical broadcast: 128 bytes of JSON data, two tags and an offset.
func benchPush() *Push {
	data := `{"user":"alice","text":"` + strings.Repeat("x", 128-len(`{"user":"alice","text":""}`)) + `"}`
	return &Push{Channel: "chat:room-42", Pub: &Publication{
		Data:   []byte(data),
		Offset: 1234567,
		Tags:   map[string]string{"lang": "en", "kind": "message"},
	}}
}

// benchMapPush is a change of a map channel's key, as map subscribers receive it.
func benchMapPush() *Push {
	p := benchPush()
	p.Pub.Key, p.Pub.Score, p.Pub.Version = "user-1842", -7, 12
	return p
}

func BenchmarkAppendPushPublication(b *testing.B) { benchAppendPush(b, benchPush) }

func BenchmarkAppendPushMapPublication(b *testing.B) { benchAppendPush(b, benchMapPush) }

func benchAppendPush(b *testing.B, push func() *Push) {
	for _, typ := range types {
		b.Run(typ.String(), func(b *testing.B) {
			reply := &Reply{Push: push()}
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = AppendReply(buf[:0], typ, reply); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

// benchCommandFrame is a first frame of a session: a connect and nine subscribes.
func benchCommandFrame(tb testing.TB, typ Type) []byte {
	tb.Helper()
	var parts [][]byte
	add := func(c *Command) {
		m, err := AppendCommand(nil, typ, c)
		if err != nil {
			tb.Fatal(err)
		}
		parts = append(parts, m)
	}
	add(&Command{Id: 1, Connect: &ConnectRequest{
		Token: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MiIsImV4cCI6MTczMDAwMDAwMH0.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
		Name:  "js", Version: "5.7.1", Data: []byte(`{"device":"web"}`),
	}})
	for i := range 9 {
		add(&Command{Id: uint32(i + 2), Subscribe: &SubscribeRequest{
			Channel: "chat:room-" + string(rune('a'+i)), Recover: i%2 == 0, Offset: uint64(1000 + i), Epoch: "HmekckJs",
		}})
	}
	return JoinFrame(nil, typ, parts)
}

func BenchmarkDecodeCommands(b *testing.B) {
	for _, typ := range types {
		b.Run(typ.String(), func(b *testing.B) {
			frame := benchCommandFrame(b, typ)
			var cmds []*Command
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				var err error
				if cmds, err = DecodeCommands(typ, frame, cmds[:0]); err != nil {
					b.Fatal(err)
				}
			}
			if len(cmds) != 10 {
				b.Fatalf("decoded %d commands", len(cmds))
			}
		})
	}
}

func BenchmarkDecodeReplies(b *testing.B) {
	for _, typ := range types {
		b.Run(typ.String(), func(b *testing.B) {
			var frame []byte
			for range 10 {
				var err error
				if frame, err = AppendReply(frame, typ, &Reply{Push: benchPush()}); err != nil {
					b.Fatal(err)
				}
				if typ == TypeJSON {
					frame = append(frame, '\n')
				}
			}
			var replies []*Reply
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				var err error
				if replies, err = DecodeReplies(typ, frame, replies[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
