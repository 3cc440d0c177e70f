package protocol

import (
	"bytes"
	"strings"
	"testing"
)

// TestAppendChannelPush: a push made of a publication encoded once is
// byte for byte what AppendReply makes of the whole push, in both
// formats, for channels and publications of every size class of their
// length prefixes.
func TestAppendChannelPush(t *testing.T) {
	channels := []string{"", "a", "news:é", `quote"back\slash<>&`, "ctl\x01", strings.Repeat("c", 127), strings.Repeat("c", 128), strings.Repeat("c", 20000)}
	pubs := []*Publication{
		{},
		{Data: []byte(`{"n":1}`)},
		{Data: []byte(`"` + strings.Repeat("x", 200) + `"`), Offset: 12, Time: 1700000000000, Tags: map[string]string{"k": "v"}, Info: &ClientInfo{User: "u", Client: "c"}},
		{Data: []byte(`[` + strings.Repeat("1,", 70000) + `1]`), Version: 3, Key: "k", Score: -4, Channel: "w:x"},
	}
	for _, typ := range []Type{TypeJSON, TypeProtobuf} {
		for _, p := range pubs {
			body, err := AppendPublication(nil, typ, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range channels {
				want, err := AppendReply([]byte("x"), typ, &Reply{Push: &Push{Channel: ch, Pub: p}})
				if err != nil {
					t.Fatal(err)
				}
				got, err := AppendChannelPush([]byte("x"), typ, ch, body)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("type %d, channel %.20q, data %d bytes:\ngot  %.200q\nwant %.200q", typ, ch, len(p.Data), got, want)
				}
			}
		}
	}
}
