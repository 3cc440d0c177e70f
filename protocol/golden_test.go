package protocol

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// The exchange recorded between centrifuge-js and a server (protocol.md, "Observed on
// the wire"). Replies must encode byte for byte as seen; fields go in proto order.

func TestGoldenClientFrame(t *testing.T) {
	frame := "{\"id\":1,\"connect\":{\"token\":\"<JWT>\",\"name\":\"js\"}}\n" +
		"{\"id\":2,\"subscribe\":{\"channel\":\"chat:index\",\"recover\":true,\"offset\":0,\"epoch\":\"\"}}"
	cmds, err := DecodeCommands(TypeJSON, []byte(frame), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []*Command{
		{Id: 1, Connect: &ConnectRequest{Token: "<JWT>", Name: "js"}},
		{Id: 2, Subscribe: &SubscribeRequest{Channel: "chat:index", Recover: true}},
	}
	if len(cmds) != len(want) {
		t.Fatalf("got %d commands, want %d", len(cmds), len(want))
	}
	for i := range want {
		if !proto.Equal(cmds[i], want[i]) {
			t.Errorf("command %d: got %v, want %v", i, cmds[i], want[i])
		}
	}
	// Re-encoded, the zero offset and empty epoch the SDK sent are left out.
	var out [][]byte
	for _, c := range cmds {
		b, err := AppendCommand(nil, TypeJSON, c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	wantFrame := "{\"id\":1,\"connect\":{\"token\":\"<JWT>\",\"name\":\"js\"}}\n" +
		"{\"id\":2,\"subscribe\":{\"channel\":\"chat:index\",\"recover\":true}}"
	if got := string(JoinFrame(nil, TypeJSON, out)); got != wantFrame {
		t.Fatalf("got  %s\nwant %s", got, wantFrame)
	}
}

// Client protocol v0.21 as centrifuge-js 5.8 and centrifuge-go send it: every
// subscribe carries flag (1 offers channel compaction, 2 asks for error 112
// rather than recovered=false), and connect may carry flag, dict and profile.
func TestGoldenClientFrameV021(t *testing.T) {
	frame := "{\"id\":1,\"connect\":{\"name\":\"go\",\"flag\":1,\"dict\":\"d1\",\"profile\":\"feed\"}}\n" +
		"{\"id\":2,\"subscribe\":{\"channel\":\"news\",\"recover\":true,\"offset\":5,\"epoch\":\"e\",\"flag\":3,\"type\":0}}"
	checkGoldenCommands(t, frame, []*Command{
		{Id: 1, Connect: &ConnectRequest{Name: "go", Flag: 1, Dict: "d1", Profile: "feed"}},
		{Id: 2, Subscribe: &SubscribeRequest{Channel: "news", Recover: true, Offset: 5, Epoch: "e", Flag: 3}},
	})
}

// Map subscriptions as centrifuge-js 5.8 drives them: state pages (the first with
// the subscribe data, later ones with the cursor and the position of the first),
// a stream page recovering after a reconnect, and a map publish and remove.
func TestGoldenMapCommands(t *testing.T) {
	frame := "{\"id\":3,\"subscribe\":{\"channel\":\"board\",\"type\":1,\"phase\":2,\"delta\":\"fossil\",\"flag\":1,\"limit\":100,\"data\":{\"a\":1}}}\n" +
		"{\"id\":4,\"subscribe\":{\"channel\":\"board\",\"type\":1,\"phase\":2,\"flag\":1,\"limit\":100,\"cursor\":\"c1\",\"offset\":12,\"epoch\":\"ep\"}}\n" +
		"{\"id\":5,\"subscribe\":{\"channel\":\"presence\",\"type\":2,\"phase\":1,\"flag\":1,\"offset\":12,\"epoch\":\"ep\",\"recover\":true}}\n" +
		"{\"id\":6,\"publish\":{\"channel\":\"board\",\"type\":1,\"key\":\"k1\",\"data\":{\"v\":1}}}\n" +
		"{\"id\":7,\"publish\":{\"channel\":\"board\",\"type\":1,\"key\":\"k1\",\"removed\":true}}"
	checkGoldenCommands(t, frame, []*Command{
		{Id: 3, Subscribe: &SubscribeRequest{Channel: "board", Type: 1, Phase: 2, Delta: "fossil", Flag: 1, Limit: 100,
			Data: []byte(`{"a":1}`)}},
		{Id: 4, Subscribe: &SubscribeRequest{Channel: "board", Type: 1, Phase: 2, Flag: 1, Limit: 100, Cursor: "c1",
			Offset: 12, Epoch: "ep"}},
		{Id: 5, Subscribe: &SubscribeRequest{Channel: "presence", Type: 2, Phase: 1, Flag: 1, Offset: 12, Epoch: "ep",
			Recover: true}},
		{Id: 6, Publish: &PublishRequest{Channel: "board", Type: 1, Key: "k1", Data: []byte(`{"v":1}`)}},
		{Id: 7, Publish: &PublishRequest{Channel: "board", Type: 1, Key: "k1", Removed: true}},
	})
}

// checkGoldenCommands decodes a JSON frame as an SDK sends it and compares the commands
// with want, which must also survive a protobuf round trip.
func checkGoldenCommands(t *testing.T, frame string, want []*Command) {
	t.Helper()
	cmds, err := DecodeCommands(TypeJSON, []byte(frame), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != len(want) {
		t.Fatalf("got %d commands, want %d", len(cmds), len(want))
	}
	for i := range want {
		if !proto.Equal(cmds[i], want[i]) {
			t.Errorf("command %d: got %v, want %v", i, cmds[i], want[i])
		}
		// The same commands in protobuf decode to the same values.
		b, err := AppendCommand(nil, TypeProtobuf, want[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeCommands(TypeProtobuf, JoinFrame(nil, TypeProtobuf, [][]byte{b}), nil)
		if err != nil || len(got) != 1 || !proto.Equal(got[0], want[i]) {
			t.Errorf("protobuf command %d: got %v (%v), want %v", i, got, err, want[i])
		}
	}
}

func TestGoldenServerReplies(t *testing.T) {
	tests := []struct {
		name  string
		reply *Reply
		want  string
	}{
		{
			name: "connect",
			reply: &Reply{Id: 1, Connect: &ConnectResult{
				Client: "f51a…", Version: "…", Expires: true, Ttl: 3600, Ping: 25, Pong: true,
			}},
			want: `{"id":1,"connect":{"client":"f51a…","version":"…","expires":true,"ttl":3600,"ping":25,"pong":true}}`,
		},
		{
			name: "subscribe with recovery",
			reply: &Reply{Id: 2, Subscribe: &SubscribeResult{
				Recoverable: true, Epoch: "HmekckJs",
				Publications: []*Publication{{Data: []byte(`{"text":"hello"}`), Offset: 1}},
				Recovered:    true, Positioned: true, WasRecovering: true,
			}},
			want: `{"id":2,"subscribe":{"recoverable":true,"epoch":"HmekckJs","publications":[{"data":{"text":"hello"},"offset":1}],"recovered":true,"positioned":true,"was_recovering":true}}`,
		},
		{
			name: "subscribe with channel compaction",
			reply: &Reply{Id: 5, Subscribe: &SubscribeResult{
				Recoverable: true, Epoch: "HmekckJs", Offset: 7, Positioned: true, Id: 12,
			}},
			want: `{"id":5,"subscribe":{"recoverable":true,"epoch":"HmekckJs","offset":7,"positioned":true,"id":12}}`,
		},
		{
			name: "compacted publication push",
			reply: &Reply{Push: &Push{Id: 12, Pub: &Publication{
				Data: []byte(`{"text":"live"}`), Offset: 8,
			}}},
			want: `{"push":{"id":12,"pub":{"data":{"text":"live"},"offset":8}}}`,
		},
		{
			name: "publication push",
			reply: &Reply{Push: &Push{Channel: "chat:index", Pub: &Publication{
				Data: []byte(`{"text":"live"}`), Offset: 2, Tags: map[string]string{"k": "v"},
			}}},
			want: `{"push":{"channel":"chat:index","pub":{"data":{"text":"live"},"offset":2,"tags":{"k":"v"}}}}`,
		},
		{
			name: "map state page",
			reply: &Reply{Id: 3, Subscribe: &SubscribeResult{
				Epoch: "ep", Offset: 12, Type: 1, Phase: 2, Cursor: "c2",
				State: []*Publication{
					{Data: []byte(`{"v":1}`), Offset: 10, Key: "a"},
					{Data: []byte(`"two"`), Offset: 12, Key: "b", Score: -5},
				},
			}},
			want: `{"id":3,"subscribe":{"epoch":"ep","offset":12,"type":1,"phase":2,"cursor":"c2","state":[{"data":{"v":1},"offset":10,"key":"a"},{"data":"two","offset":12,"key":"b","score":-5}]}}`,
		},
		{
			name: "map live with catch-up",
			reply: &Reply{Id: 5, Subscribe: &SubscribeResult{
				Recoverable: true, Epoch: "ep", Offset: 14, Positioned: true, Type: 1,
				Publications: []*Publication{
					{Offset: 13, Key: "a", Removed: true},
					{Data: []byte(`{"v":3}`), Offset: 14, Key: "b", Version: 3},
				},
				State:           []*Publication{{Data: []byte(`{"v":2}`), Offset: 11, Key: "c"}},
				PublishDebounce: 250,
			}},
			want: `{"id":5,"subscribe":{"recoverable":true,"epoch":"ep","publications":[{"offset":13,"key":"a","removed":true},{"data":{"v":3},"offset":14,"key":"b","version":3}],"offset":14,"positioned":true,"type":1,"state":[{"data":{"v":2},"offset":11,"key":"c"}],"publish_debounce":250}}`,
		},
		{
			name: "map publication push",
			reply: &Reply{Push: &Push{Id: 12, Pub: &Publication{
				Data: []byte(`{"v":4}`), Offset: 15, Key: "b", Score: 7,
			}}},
			want: `{"push":{"id":12,"pub":{"data":{"v":4},"offset":15,"key":"b","score":7}}}`,
		},
		{
			name:  "map removal push",
			reply: &Reply{Push: &Push{Channel: "board", Pub: &Publication{Offset: 16, Key: "b", Removed: true}}},
			want:  `{"push":{"channel":"board","pub":{"offset":16,"key":"b","removed":true}}}`,
		},
		{
			name:  "error",
			reply: &Reply{Id: 3, Error: &Error{Code: 103, Message: "permission denied"}},
			want:  `{"id":3,"error":{"code":103,"message":"permission denied"}}`,
		},
		{
			// centrifuge-js reads a missing count as undefined, not 0.
			name:  "presence stats of an empty channel",
			reply: &Reply{Id: 6, PresenceStats: &PresenceStatsResult{}},
			want:  `{"id":6,"presence_stats":{"num_clients":0,"num_users":0}}`,
		},
		{
			name:  "history of an empty stream",
			reply: &Reply{Id: 7, History: &HistoryResult{}},
			want:  `{"id":7,"history":{"publications":[],"epoch":"","offset":0}}`,
		},
		{
			name:  "ping",
			reply: &Reply{},
			want:  `{}`,
		},
		{
			name:  "empty result",
			reply: &Reply{Id: 4, Ping: &PingResult{}},
			want:  `{"id":4,"ping":{}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendReply(nil, TypeJSON, tt.reply)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			back, err := DecodeReply(TypeJSON, got)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(back, tt.reply) {
				t.Fatalf("decoded %v, want %v", back, tt.reply)
			}
		})
	}
}

func TestGoldenUnidirectionalPush(t *testing.T) {
	p := &Push{Channel: "c", Pub: &Publication{Data: []byte(`{"x":1}`)}}
	got, err := AppendPush(nil, TypeJSON, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"channel":"c","pub":{"data":{"x":1}}}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	connect := &Push{Connect: &Connect{Client: "id", Version: "v", Ping: 25, Session: "s", Node: "n"}}
	got, err = AppendPush(nil, TypeJSON, connect)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"connect":{"client":"id","version":"v","ping":25,"session":"s","node":"n"}}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
