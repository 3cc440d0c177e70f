package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/tracectx"
)

// The requests and results of the API's methods. Their JSON form is the
// HTTP API's (Centrifugo v6 field names); the gRPC API fills the same
// structs from its protobuf messages, so every method is written once, in
// methods.go, whatever carried the request.

// Error is an error of the API with its code: the "error" object of a
// reply. Codes and messages are those of the protocol (docs/api.md).
type Error struct {
	Code    uint32 `json:"code"`
	Message string `json:"message"`
}

var _ error = (*Error)(nil)

func (e *Error) Error() string { return fmt.Sprintf("api: error %d: %s", e.Code, e.Message) }

var (
	errInternal              = &Error{100, "internal server error"}
	errUnknownChannel        = &Error{102, "unknown channel"}
	errPermissionDenied      = &Error{103, "permission denied"}
	errMethodNotFound        = &Error{104, "method not found"}
	errBadRequest            = &Error{107, "bad request"}
	errNotAvailable          = &Error{108, "not available"}
	errUnrecoverablePosition = &Error{112, "unrecoverable position"}
	// errRPCNotFound answers an rpc call of a method nobody serves, with
	// the code and message Centrifugo gives it.
	errRPCNotFound = &Error{104, "not found"}
)

// Payload is the data of a request or result: raw JSON, or any bytes when
// they came over gRPC or were published with b64data. In JSON it is
// written as is when it is JSON, else as a base64 string, so that a
// response is always valid JSON.
type Payload []byte

// MarshalJSON writes p as is when it is JSON, else as a base64 string.
func (p Payload) MarshalJSON() ([]byte, error) {
	if len(p) == 0 {
		return []byte("null"), nil
	}
	if json.Valid(p) {
		return p, nil
	}
	b, err := json.Marshal([]byte(p))
	if err != nil {
		return nil, fmt.Errorf("api: encode binary payload: %w", err)
	}
	return b, nil
}

// UnmarshalJSON keeps a copy of the raw JSON.
func (p *Payload) UnmarshalJSON(b []byte) error {
	*p = append((*p)[:0], b...)
	return nil
}

// info is connection or channel info: JSON set by a token, a proxy or the
// API. In JSON it is written as is when it is JSON and left out otherwise.
type info []byte

func (i info) MarshalJSON() ([]byte, error) {
	if len(i) == 0 || !json.Valid(i) {
		return []byte("null"), nil
	}
	return i, nil
}

func (i *info) UnmarshalJSON(b []byte) error {
	*i = append((*i)[:0], b...)
	return nil
}

// publishData picks the payload of a publish or broadcast: b64data when
// set, else data.
func publishData(data Payload, b64 string) ([]byte, error) {
	if b64 != "" {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, &Error{107, "bad request: b64data: " + err.Error()}
		}
		return b, nil
	}
	if len(data) == 0 {
		return nil, &Error{107, "bad request: data required"}
	}
	return data, nil
}

// PublishRequest publishes Data (or B64Data, base64) into Channel.
type PublishRequest struct {
	Channel string  `json:"channel"`
	Data    Payload `json:"data"`
	B64Data string  `json:"b64data"`
	PublishFlags
}

// PublishFlags are the options publish and broadcast share.
type PublishFlags struct {
	SkipHistory    bool              `json:"skip_history"`
	Tags           map[string]string `json:"tags"`
	IdempotencyKey string            `json:"idempotency_key"`
	Delta          bool              `json:"delta"`
	// Version and VersionEpoch drop a publication that is not newer than
	// the channel's last (channels with history; see gyre.WithVersion).
	Version      uint64 `json:"version"`
	VersionEpoch string `json:"version_epoch"`
}

// options are the node's publish options of f; tc is the trace context
// the publication carries (traceOf), nil for none. Every publication of
// the API, single, broadcast or in a batch, gets its options here.
func (f *PublishFlags) options(tc []byte) gyre.PublishOptions {
	o := gyre.PublishOptions{
		Tags: f.Tags, IdempotencyKey: f.IdempotencyKey, SkipHistory: f.SkipHistory, UseDelta: f.Delta,
		Version: f.Version, VersionEpoch: f.VersionEpoch,
	}
	o.Trace = tc
	return o
}

// PublishResult is the place of a publication in its channel's history
// (zero without history).
type PublishResult struct {
	Offset uint64 `json:"offset,omitempty"`
	Epoch  string `json:"epoch,omitempty"`
}

// BroadcastRequest publishes the same data into each of Channels.
type BroadcastRequest struct {
	Channels []string `json:"channels"`
	Data     Payload  `json:"data"`
	B64Data  string   `json:"b64data"`
	PublishFlags
}

// BroadcastResult has one response per channel, in request order.
type BroadcastResult struct {
	Responses []PublishResponse `json:"responses"`
}

// PublishResponse is the answer for one channel of a broadcast.
type PublishResponse struct {
	Result *PublishResult `json:"result,omitempty"`
	Error  *Error         `json:"error,omitempty"`
}

// StreamPosition is a place in a channel's history stream.
type StreamPosition struct {
	Offset uint64 `json:"offset"`
	Epoch  string `json:"epoch"`
}

// SubscribeRequest subscribes a user's connections (or one client or
// session of it) to Channel from the server side. Info (or B64Info) is
// the subscriber's channel info, Data (or B64Data) goes out in the
// subscribe push, RecoverSince sends the publications after it,
// ExpireAt ends the subscription, Override changes channel options for
// it.
type SubscribeRequest struct {
	Channel      string             `json:"channel"`
	User         string             `json:"user"`
	Client       string             `json:"client"`
	Session      string             `json:"session"`
	Info         Payload            `json:"info"`
	B64Info      string             `json:"b64info"`
	Data         Payload            `json:"data"`
	B64Data      string             `json:"b64data"`
	RecoverSince *StreamPosition    `json:"recover_since"`
	ExpireAt     int64              `json:"expire_at"`
	Override     *SubscribeOverride `json:"override"`
}

// BoolValue wraps a bool that may be absent.
type BoolValue struct {
	Value bool `json:"value"`
}

// SubscribeOverride turns channel options on or off for one
// subscription; an absent field keeps the channel's.
type SubscribeOverride struct {
	Presence           *BoolValue `json:"presence"`
	JoinLeave          *BoolValue `json:"join_leave"`
	ForceRecovery      *BoolValue `json:"force_recovery"`
	ForcePositioning   *BoolValue `json:"force_positioning"`
	ForcePushJoinLeave *BoolValue `json:"force_push_join_leave"`
}

func (b *BoolValue) ptr() *bool {
	if b == nil {
		return nil
	}
	v := b.Value
	return &v
}

func (o *SubscribeOverride) engine() *gyre.SubscribeOverride {
	if o == nil {
		return nil
	}
	return &gyre.SubscribeOverride{
		Presence: o.Presence.ptr(), JoinLeave: o.JoinLeave.ptr(), ForcePushJoinLeave: o.ForcePushJoinLeave.ptr(),
		ForceRecovery: o.ForceRecovery.ptr(), ForcePositioning: o.ForcePositioning.ptr(),
	}
}

// optionalPayload picks b64 (base64) when set, else raw; null is none.
func optionalPayload(raw Payload, b64, name string) ([]byte, error) {
	if b64 != "" {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, &Error{107, "bad request: " + name + ": " + err.Error()}
		}
		return b, nil
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return raw, nil
}

// UnsubscribeRequest removes a user's connections (or one client or
// session) from Channel.
type UnsubscribeRequest struct {
	Channel string `json:"channel"`
	User    string `json:"user"`
	Client  string `json:"client"`
	Session string `json:"session"`
}

// DisconnectRequest closes a user's connections, or one client or
// session, except those in Whitelist.
type DisconnectRequest struct {
	User      string   `json:"user"`
	Client    string   `json:"client"`
	Session   string   `json:"session"`
	Whitelist []string `json:"whitelist"`
	// Disconnect is the close code and reason; nil is 3503 "force
	// disconnect".
	Disconnect *Disconnect `json:"disconnect"`
}

// Disconnect is a close code (3000-4999) and reason.
type Disconnect struct {
	Code   uint32 `json:"code"`
	Reason string `json:"reason"`
}

// RefreshRequest extends (or ends, with Expired) a user's connections.
type RefreshRequest struct {
	User     string  `json:"user"`
	Client   string  `json:"client"`
	Session  string  `json:"session"`
	Expired  bool    `json:"expired"`
	ExpireAt int64   `json:"expire_at"`
	Info     Payload `json:"info"`
}

// ChannelRequest names the channel of presence, presence_stats and
// history_remove.
type ChannelRequest struct {
	Channel string `json:"channel"`
}

// EmptyResult is the result of the methods that return nothing.
type EmptyResult struct{}

// ClientInfo describes a connection in presence and publications.
type ClientInfo struct {
	User     string `json:"user"`
	Client   string `json:"client"`
	ConnInfo info   `json:"conn_info,omitempty"`
	ChanInfo info   `json:"chan_info,omitempty"`
}

// PresenceResult maps client id to the client.
type PresenceResult struct {
	Presence map[string]ClientInfo `json:"presence"`
}

// PresenceStatsResult counts the clients and distinct users in a channel.
type PresenceStatsResult struct {
	NumClients int `json:"num_clients"`
	NumUsers   int `json:"num_users"`
}

// HistoryRequest reads a channel's history: Limit 0 gives only the
// stream's top, -1 everything kept.
type HistoryRequest struct {
	Channel string          `json:"channel"`
	Limit   int             `json:"limit"`
	Since   *StreamPosition `json:"since"`
	Reverse bool            `json:"reverse"`
}

// Publication is one entry of a channel's history.
type Publication struct {
	Data   Payload           `json:"data"`
	Info   *ClientInfo       `json:"info,omitempty"`
	Offset uint64            `json:"offset,omitempty"`
	Tags   map[string]string `json:"tags,omitempty"`
}

// HistoryResult is the publications asked for and the stream's top.
type HistoryResult struct {
	Publications []Publication `json:"publications"`
	Epoch        string        `json:"epoch,omitempty"`
	Offset       uint64        `json:"offset,omitempty"`
}

// ChannelsRequest lists the active channels, those matching Pattern (a
// path.Match pattern) if set.
type ChannelsRequest struct {
	Pattern string `json:"pattern"`
}

// ChannelInfo counts a channel's clients.
type ChannelInfo struct {
	NumClients int `json:"num_clients"`
}

// ChannelsResult maps channel name to its counts.
type ChannelsResult struct {
	Channels map[string]ChannelInfo `json:"channels"`
}

// InfoRequest asks about the nodes of the cluster.
type InfoRequest struct{}

// NodeInfo describes one node.
type NodeInfo struct {
	UID         string `json:"uid"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	NumClients  int    `json:"num_clients"`
	NumUsers    int    `json:"num_users"`
	NumChannels int    `json:"num_channels"`
	NumSubs     int    `json:"num_subs"`
	// Uptime in seconds.
	Uptime int64 `json:"uptime"`
	// Metrics is what the node measured over its last announce interval.
	Metrics *NodeMetrics `json:"metrics,omitempty"`
}

// NodeMetrics are a node's measurements, named as in Centrifugo's info
// (interval in seconds, items by name): gyre_publish_rate (publications
// per second), gyre_memory_bytes and gyre_broker_healthy (1 or 0).
type NodeMetrics struct {
	Interval float64            `json:"interval"`
	Items    map[string]float64 `json:"items"`
}

// InfoResult lists the nodes.
type InfoResult struct {
	Nodes []NodeInfo `json:"nodes"`
}

// RPCRequest calls Method of the application with Params.
type RPCRequest struct {
	Method string  `json:"method"`
	Params Payload `json:"params"`
}

// RPCResult is what the method answered.
type RPCResult struct {
	Data Payload `json:"data"`
}

// BatchRequest runs Commands in order, or concurrently with Parallel.
// Read from JSON, {"commands":[{"<method>":{...}},...],"parallel":false},
// it keeps each command's JSON and decodes it only as its turn comes, so
// that a batch of many commands is not held decoded all at once.
type BatchRequest struct {
	Commands []Command
	Parallel bool

	// raw are the commands as read from JSON, in place of Commands.
	raw []rawCommand
	// fromJSON: raw holds the commands (there may be none).
	fromJSON bool
}

// UnmarshalJSON reads a batch, leaving its commands undecoded.
func (r *BatchRequest) UnmarshalJSON(b []byte) error {
	read, err := readBatchJSON(b)
	if err != nil {
		return err
	}
	*r = *read
	return nil
}

// len is the number of commands of r.
func (r *BatchRequest) len() int {
	if r.fromJSON {
		return len(r.raw)
	}
	return len(r.Commands)
}

// at is the i-th command of r, decoded from JSON if it came so.
func (r *BatchRequest) at(i int) Command {
	if !r.fromJSON {
		return r.Commands[i]
	}
	cmd := r.raw[i]
	r.raw[i] = rawCommand{} // read once
	if cmd.keys != 1 {
		return Command{err: errBadRequest}
	}
	return batchCommand(cmd.name, cmd.body)
}

// Command is one command of a batch: a method and its request.
type Command struct {
	method *Method
	// req is the request: a *PublishRequest for publish, and so on.
	req any

	// name is the method as the request named it, for the log, and err
	// why the command cannot run, when it could not be read.
	name string
	err  *Error

	// span, when set, is the command's own span (SetSpan); named: the
	// executor names the command's method and channel on it.
	span  trace.Span
	named bool
}

// NewCommand makes the command of the method called name with request
// req: a *PublishRequest for "publish", a *ChannelRequest for
// "presence", and so on. A command that cannot run (an unknown method,
// batch itself, a request of another type) is answered with its error
// in its reply.
func NewCommand(name string, req any) Command {
	m := lookup(name)
	if m == nil || name == "batch" {
		return Command{name: name, err: errMethodNotFound}
	}
	if req == nil || reflect.TypeOf(req) != reflect.TypeOf(m.newRequest()) {
		return Command{name: name, err: &Error{107, fmt.Sprintf("bad request: %s takes a %T", name, m.newRequest())}}
	}
	return Command{method: m, req: req, name: name}
}

// Method is the name of the command's method as it was asked for; ""
// when none was.
func (c *Command) Method() string { return c.name }

// SetSpan makes s the span of c, in place of the span of the context c
// runs in: the publications of c carry its trace context, and, when
// named, the executor names c's method and channel on it (not named: s
// is shared by several commands, a consumed batch, and tells of them as
// a whole). A consumer gives the commands of each message the message's
// span, so that the commands of many messages run as one batch and each
// publication still joins the trace of its own message.
func (c *Command) SetSpan(s trace.Span, named bool) { c.span, c.named = s, named }

// annotate names c's method and channels on c's own span, if it has one.
func (c *Command) annotate() {
	if c.span != nil && c.named && c.err == nil {
		annotate(c.span, c.method, c.req)
	}
}

// trace is the trace context of c's publications: its own span's, or
// else batch, that of the context the batch runs in.
func (c *Command) trace(batch []byte) []byte {
	if c.span != nil {
		return tracectx.Encode(c.span.SpanContext())
	}
	return batch
}

// publishes reports whether c is a publish or broadcast that can run,
// which a sequential batch publishes with its neighbours.
func (c *Command) publishes() bool {
	if c.err != nil {
		return false
	}
	switch c.req.(type) {
	case *PublishRequest, *BroadcastRequest:
		return true
	}
	return false
}

// BatchResult has one reply per command, in command order.
type BatchResult struct {
	Replies []Reply `json:"replies"`
}

// Reply is one command's answer in a batch: Error, or the result of
// Method (a PublishResult for "publish", an EmptyResult for
// "subscribe", and so on). In JSON it is {"<method>":{...}} or
// {"error":{...}}.
type Reply struct {
	Method string
	Result any
	Error  *Error
}

func (r Reply) MarshalJSON() ([]byte, error) {
	return r.appendJSON(nil)
}

// appendJSON appends r's JSON to b. A publish result, the reply of
// most commands of large batches, is written by hand: encoding/json
// spent a tenth of the server's CPU on the replies of batched publishes
// (docs/benchmarks.md, "History publishes on Redis").
func (r Reply) appendJSON(b []byte) ([]byte, error) {
	if r.Error != nil {
		e, err := json.Marshal(r.Error)
		if err != nil {
			return nil, fmt.Errorf("api: encode batch error: %w", err)
		}
		return append(append(append(b, `{"error":`...), e...), '}'), nil
	}
	b = append(appendJSONString(append(b, '{'), r.Method), ':')
	switch res := r.Result.(type) {
	case PublishResult:
		return append(res.appendJSON(b), '}'), nil
	case BroadcastResult:
		b, err := res.appendJSON(b)
		if err != nil {
			return nil, err
		}
		return append(b, '}'), nil
	}
	res, err := json.Marshal(r.Result)
	if err != nil {
		return nil, fmt.Errorf("api: encode %s reply: %w", r.Method, err)
	}
	return append(append(b, res...), '}'), nil
}

// appendJSON appends r's JSON to b as encoding/json writes it.
func (r PublishResult) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if r.Offset != 0 {
		b = strconv.AppendUint(append(b, `"offset":`...), r.Offset, 10)
	}
	if r.Epoch != "" {
		if r.Offset != 0 {
			b = append(b, ',')
		}
		b = appendJSONString(append(b, `"epoch":`...), r.Epoch)
	}
	return append(b, '}')
}

func (r BroadcastResult) jsonSizeHint() int { return 16*len(r.Responses) + 16 }

// appendJSON appends r's JSON to b as encoding/json writes it: by hand,
// as a broadcast to thousands of channels has thousands of responses.
func (r BroadcastResult) appendJSON(b []byte) ([]byte, error) {
	if r.Responses == nil {
		return append(b, `{"responses":null}`...), nil
	}
	b = append(b, `{"responses":[`...)
	for i, pr := range r.Responses {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if pr.Result != nil {
			b = pr.Result.appendJSON(append(b, `"result":`...))
		}
		if pr.Error != nil {
			e, err := json.Marshal(pr.Error)
			if err != nil {
				return nil, fmt.Errorf("api: encode broadcast error: %w", err)
			}
			if pr.Result != nil {
				b = append(b, ',')
			}
			b = append(append(b, `"error":`...), e...)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

func (r BatchResult) jsonSizeHint() int { return 64*len(r.Replies) + 16 }

// appendJSON appends r's JSON to b: {"replies":[...]}.
func (r BatchResult) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"replies":[`...)
	for i, rep := range r.Replies {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = rep.appendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, "]}"...), nil
}

// appendJSONString appends s as a JSON string, as encoding/json writes
// it (HTML characters escaped).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// reply is one method's answer over HTTP: a result or an error.
type reply struct {
	Result any    `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
}
