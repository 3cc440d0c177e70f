package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"
)

// seedCommands are commands as real SDKs send them: the first frame of a session, the
// requests that follow, and the pong.
func seedCommands() []*Command {
	return []*Command{
		{},
		{Id: 1, Connect: &ConnectRequest{Token: "eyJhbGciOiJIUzI1NiJ9.e30.sig", Name: "js", Version: "5.7.1",
			Data: []byte(`{"app":"x"}`), Headers: map[string]string{"X-A": "b"},
			Subs: map[string]*SubscribeRequest{"news": {Recover: true, Offset: 4, Epoch: "ab"}}}},
		{Id: 2, Subscribe: &SubscribeRequest{Channel: "chat:index", Recover: true, Offset: 17, Epoch: "HmekckJs",
			Data: []byte(`[1,"two"]`), JoinLeave: true, Delta: "fossil", Positioned: true, Recoverable: true}},
		{Id: 3, Subscribe: &SubscribeRequest{Channel: "ticker", Tf: &FilterNode{Op: "and", Nodes: []*FilterNode{
			{Key: "ticker", Cmp: "in", Vals: []string{"AAPL", "GOOG"}}, {Op: "not", Nodes: []*FilterNode{{Key: "p", Cmp: "gt", Val: "10.5"}}},
		}}}},
		{Id: 4, Unsubscribe: &UnsubscribeRequest{Channel: "chat:index"}},
		{Id: 5, Publish: &PublishRequest{Channel: "chat:index", Data: []byte(`{"text":"héllo \"you\""}`)}},
		{Id: 6, Presence: &PresenceRequest{Channel: "p"}},
		{Id: 7, PresenceStats: &PresenceStatsRequest{Channel: "p"}},
		{Id: 8, History: &HistoryRequest{Channel: "h", Limit: -1, Since: &StreamPosition{Offset: 3, Epoch: "e"}, Reverse: true}},
		{Id: 9, Ping: &PingRequest{}},
		{Send: &SendRequest{Data: []byte(`"async"`)}},
		{Id: 10, Rpc: &RPCRequest{Method: "getUser", Data: []byte(`{"id":42}`)}},
		{Id: 11, Refresh: &RefreshRequest{Token: "t2"}},
		{Id: 12, SubRefresh: &SubRefreshRequest{Channel: "$private", Token: "st"}},
		{Id: 13, Subscribe: &SubscribeRequest{Channel: "board", Type: 1, Phase: 2, Flag: 1, Limit: 100, Cursor: "c1",
			Offset: 12, Epoch: "ep", Delta: "fossil"}},
		{Id: 14, Subscribe: &SubscribeRequest{Channel: "board", Type: 2, Phase: 1, Flag: 1, Limit: 100, Offset: 12,
			Epoch: "ep", Recover: true, Data: []byte(`{"x":1}`), Asc: true}},
		{Id: 15, Publish: &PublishRequest{Channel: "board", Type: 1, Key: "k1", Data: []byte(`{"v":1}`)}},
		{Id: 16, Publish: &PublishRequest{Channel: "board", Type: 1, Key: "k1", Removed: true}},
	}
}

// seedFrames returns frames of the seed commands in format t: each alone, and all of
// them batched into one frame.
func seedFrames(tb testing.TB, t Type) [][]byte {
	tb.Helper()
	var frames, parts [][]byte
	for _, c := range seedCommands() {
		b, err := AppendCommand(nil, t, c)
		if err != nil {
			tb.Fatal(err)
		}
		frames = append(frames, b)
		parts = append(parts, b)
	}
	return append(frames, JoinFrame(nil, t, parts))
}

// fuzzDecodeCommands checks that a frame, and each half of it as transports may cut it,
// decodes without panicking, and that what decodes survives a re-encoding.
func fuzzDecodeCommands(t *testing.T, typ Type, frame []byte) {
	half := len(frame) / 2
	for _, part := range [][]byte{frame, frame[:half], frame[half:]} {
		cmds, err := DecodeCommands(typ, part, nil)
		if err != nil {
			continue
		}
		if typ == TypeJSON {
			checkValidJSONStream(t, part, len(cmds))
		}
		for _, c := range cmds {
			data, err := AppendCommand(nil, typ, c)
			if err != nil {
				t.Fatalf("re-encode %v: %v", c, err)
			}
			back, err := DecodeCommands(typ, data, nil)
			if err != nil || len(back) != 1 {
				t.Fatalf("re-decode %q: %d commands, %v", data, len(back), err)
			}
			if !proto.Equal(back[0], c) {
				t.Fatalf("re-decoded %v, want %v", back[0], c)
			}
		}
	}
}

func FuzzDecodeCommandsJSON(f *testing.F) {
	for _, frame := range seedFrames(f, TypeJSON) {
		f.Add(frame)
	}
	f.Add([]byte("{\"id\":1}\r\n\n{\"id\":2,\"x\":[{\"y\":\"\\ud83d\\ude00\"}]}\n"))
	f.Fuzz(func(t *testing.T, frame []byte) {
		fuzzDecodeCommands(t, TypeJSON, frame)
	})
}

func FuzzDecodeCommandsProtobuf(f *testing.F) {
	for _, frame := range seedFrames(f, TypeProtobuf) {
		f.Add(frame)
	}
	f.Add([]byte{0x00, 0x00})
	f.Fuzz(func(t *testing.T, frame []byte) {
		fuzzDecodeCommands(t, TypeProtobuf, frame)
	})
}

// FuzzJSONRoundTrip builds a reply from arbitrary strings and numbers and checks that it
// encodes to valid JSON that decodes back to the same reply (strings with invalid UTF-8
// come back with U+FFFD, which is the documented encoding).
func FuzzJSONRoundTrip(f *testing.F) {
	f.Add("chat:index", "k", "v", uint64(1), int64(0), uint32(0))
	f.Add("a\"\\\n\x00", "\u2028", "\xff\xfe", uint64(1<<64-1), int64(-1<<63), uint32(1<<32-1))
	f.Add("", "", "😀", uint64(0), int64(7), uint32(3000))
	f.Fuzz(func(t *testing.T, channel, key, val string, offset uint64, tm int64, code uint32) {
		data := AppendJSONString(nil, val)
		in := &Reply{Id: code, Push: &Push{Id: tm, Channel: channel, Pub: &Publication{
			Data: data, Offset: offset, Time: tm, Channel: val,
			Key: key, Removed: code%2 == 1, Score: -tm, Epoch: channel, PrevData: data, Version: offset,
			Tags: map[string]string{key: val, "k" + key: channel},
			Info: &ClientInfo{User: key, ConnInfo: []byte(`{"n":` + string(AppendJSONString(nil, channel)) + `}`)},
		}}, Error: &Error{Code: code, Message: val, Temporary: code%2 == 0}}
		out, err := AppendReply(nil, TypeJSON, in)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %q", out)
		}
		got, err := DecodeReply(TypeJSON, out)
		if err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
		want := proto.Clone(in).(*Reply)
		valid := func(s string) string { return string([]rune(s)) } // U+FFFD per bad byte
		want.Push.Channel = valid(channel)
		want.Push.Pub.Channel = valid(val)
		want.Push.Pub.Key = valid(key)
		want.Push.Pub.Epoch = valid(channel)
		want.Push.Pub.Tags = map[string]string{valid(key): valid(val), valid("k" + key): valid(channel)}
		want.Push.Pub.Info.User = valid(key)
		want.Error.Message = valid(val)
		if !proto.Equal(got, want) {
			t.Fatalf("got %v\nwant %v", got, want)
		}
		var s string
		if err := json.Unmarshal(got.Push.Pub.Data, &s); err != nil || s != valid(val) {
			t.Fatalf("data string %q decodes to %q, %v", got.Push.Pub.Data, s, err)
		}
	})
}

// checkValidJSONStream cross-checks an accepted JSON frame with encoding/json: whatever
// this package accepts must be a stream of n valid JSON values.
func checkValidJSONStream(t *testing.T, frame []byte, n int) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(frame))
	for i := 0; ; i++ {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			if i != n {
				t.Fatalf("encoding/json sees %d values in %q, decoded %d", i, frame, n)
			}
			return
		}
		if err != nil {
			t.Fatalf("accepted %q, which encoding/json rejects: %v", frame, err)
		}
	}
}
