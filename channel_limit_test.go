package gyre_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/logtest"
	"github.com/gyrehq/gyre/protocol"
)

// The tests of this file check that the server-side subscriptions of a
// connect count against client.channel_limit all together, whichever
// source names them, and that a connect over the limit is refused with
// 3505 "channel limit" on every transport, with one log line.

const channelLimitRefused = "connect refused: server-side subscriptions over the channel limit"

// manyChannels returns n distinct channel names.
func manyChannels(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// limitNode starts a node on every transport with the given channel limit,
// its logs recorded.
func limitNode(t *testing.T, limit int, personal bool, setup func(*gyre.Node)) (*transportServer, *logtest.Recorder) {
	t.Helper()
	logs := &logtest.Recorder{}
	cfg := tokenTestConfig()
	cfg.ChannelLimit = limit
	cfg.SubscribeToUserPersonalChannel = personal
	cfg.Logger = slog.New(logs)
	return newTransportServer(t, cfg, transportOptions{setup: setup}), logs
}

// wantOneRefusal checks that the node logged the refusal once, and
// nothing else for the connection.
func wantOneRefusal(t *testing.T, logs *logtest.Recorder, channels int) {
	t.Helper()
	refused := logs.Find(slog.LevelInfo, channelLimitRefused, nil)
	if len(refused) != 1 {
		t.Fatalf("%d refusal lines, want 1", len(refused))
	}
	if got := refused[0].Attr("channels"); got != fmt.Sprint(channels) {
		t.Errorf("refusal line counts %s channels, want %d", got, channels)
	}
	client := map[string]string{"client": refused[0].Attr("client")}
	var all []logtest.Record
	for _, l := range []slog.Level{slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		all = append(all, logs.Find(l, "", client)...)
	}
	if len(all) != 1 {
		t.Errorf("%d log lines at info or above for the connection, want only the refusal: %+v", len(all), all)
	}
}

func wsURL(s *transportServer) string {
	return "ws" + s.url[len("http"):] + "/connection/websocket"
}

// TestConnectTokenChannelsOverLimit: the case, a token naming
// 2,000 channels with a limit of 128, through a WebSocket client of each
// protocol: closed with 3505 "channel limit", one log line.
func TestConnectTokenChannelsOverLimit(t *testing.T) {
	protocols(t, func(t *testing.T, proto protocol.Type) {
		s, logs := limitNode(t, 128, false, nil)
		tok := signWith(t, testSecret, with(goodClaims("42", ""), "channels", manyChannels("chat:many-", 2000)))
		c := dial(t, wsURL(s), proto)
		_, closed := c.TryCall(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}})
		if closed == nil || closed.Code != 3505 || closed.Reason != "channel limit" {
			t.Fatalf("closed %+v, want 3505 channel limit", closed)
		}
		wantOneRefusal(t, logs, 2000)
		if info := s.node.Info()[0]; info.NumClients != 0 || info.NumSubs != 0 {
			t.Errorf("after the refusal the node has %d clients, %d subscriptions", info.NumClients, info.NumSubs)
		}
	})
}

// TestConnectServerSideSourcesCountTogether: token channels, token subs,
// the connecting handler's channels and subscriptions and the personal
// channel count as one set (a channel named twice counts once): at the
// limit the connect passes with all of them, one over it is refused.
func TestConnectServerSideSourcesCountTogether(t *testing.T) {
	claims := with(goodClaims("42", ""), "channels", []string{"chat:a", "chat:b", "chat:shared"})
	claims = with(claims, "subs", map[string]any{"chat:c": map[string]any{}, "chat:shared": map[string]any{}})
	tok := signWith(t, testSecret, claims)
	handler := func(n *gyre.Node) {
		n.OnConnecting(func(context.Context, gyre.ConnectingEvent) (gyre.ConnectingReply, error) {
			return gyre.ConnectingReply{
				Channels:      []string{"chat:d"},
				Subscriptions: map[string]gyre.SubscribeOptions{"chat:e": {}, "chat:a": {}},
			}, nil
		})
	}
	// a, b, shared, c, d, e and the personal channel #42.
	const distinct = 7
	for _, tc := range []struct {
		name  string
		limit int
		want  uint16 // close code, 0 for a connect that passes
	}{
		{"at the limit", distinct, 0},
		{"one over", distinct - 1, 3505},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, logs := limitNode(t, tc.limit, true, handler)
			c := dial(t, wsURL(s), protocol.TypeJSON)
			r, closed := c.TryCall(&protocol.Command{Connect: &protocol.ConnectRequest{Token: tok}})
			if tc.want != 0 {
				if closed == nil || uint16(closed.Code) != tc.want {
					t.Fatalf("reply %+v closed %+v, want close %d", r, closed, tc.want)
				}
				wantOneRefusal(t, logs, distinct)
				return
			}
			if closed != nil || r.Connect == nil {
				t.Fatalf("reply %+v closed %+v, want a connect result", r, closed)
			}
			if len(r.Connect.Subs) != distinct {
				t.Errorf("connect subs %v, want %d", r.Connect.Subs, distinct)
			}
		})
	}
}

// TestConnectChannelLimitOnStreams: the refusal reaches clients of the
// other transports as they read disconnects: a disconnect push before the
// end of an SSE or HTTP-stream response, and of a unidirectional one.
func TestConnectChannelLimitOnStreams(t *testing.T) {
	tok := func(t *testing.T) string {
		return signWith(t, testSecret, with(goodClaims("42", ""), "channels", manyChannels("chat:s-", 5)))
	}
	for _, transport := range []string{"sse", "http_stream"} {
		t.Run(transport, func(t *testing.T) {
			s, logs := limitNode(t, 4, false, nil)
			c := openStream(t, s.url, transport, protocol.TypeJSON,
				&protocol.Command{Id: 1, Connect: &protocol.ConnectRequest{Token: tok(t)}})
			d := c.waitEnd()
			if d == nil || d.Code != 3505 || d.Reason != "channel limit" {
				t.Fatalf("disconnect %+v, want 3505 channel limit", d)
			}
			wantOneRefusal(t, logs, 5)
		})
	}
	for _, transport := range []string{"uni_http_stream", "uni_sse"} {
		t.Run(transport, func(t *testing.T) {
			s, logs := limitNode(t, 4, false, nil)
			u := openUni(t, s.url, transport, `{"token":"`+tok(t)+`"}`, true)
			p, _ := u.next()
			if p.Disconnect == nil || p.Disconnect.Code != 3505 || p.Disconnect.Reason != "channel limit" {
				t.Fatalf("push %+v, want disconnect 3505 channel limit", p)
			}
			wantOneRefusal(t, logs, 5)
		})
	}
}
