package loadtest

// Result is the summary of a run. Durations are in microseconds or
// seconds as the field names say; memory in bytes.
type Result struct {
	Scenario string `json:"scenario"`
	URL      string `json:"url"`
	Protocol string `json:"protocol"`
	Procs    int    `json:"procs"`
	// Sources is how many local addresses the connections came from;
	// zero: the kernel chose.
	Sources     int              `json:"source_addrs,omitempty"`
	Seconds     float64          `json:"seconds"`
	Connections ConnResult       `json:"connections"`
	Received    TrafficResult    `json:"received"`
	Publish     *PublishResult   `json:"publish,omitempty"`
	Delivery    *DeliveryResult  `json:"delivery,omitempty"`
	Churn       *ChurnResult     `json:"churn,omitempty"`
	Reconnect   *ReconnectResult `json:"reconnect,omitempty"`
	Server      *ServerResult    `json:"server,omitempty"`
	Client      ClientResult     `json:"client"`
	Errors      []ErrorCount     `json:"errors,omitempty"`
}

// ConnResult is about opening the connections.
type ConnResult struct {
	Target  int   `json:"target"`
	Subs    int   `json:"subs_per_conn"`
	Opened  int64 `json:"opened"`
	Failed  int64 `json:"failed"`
	Dropped int64 `json:"dropped"` // closed by the server or the network after opening
	// PerSecond is connections opened per second of the opening phase.
	PerSecond float64 `json:"per_second"`
	// Latency runs from the dial to the last subscribe reply.
	Latency Percentiles `json:"latency"`
}

// TrafficResult is what the connections received after their
// handshakes (connect and subscribe replies and pings included), and
// whether they compressed it.
type TrafficResult struct {
	// Compression is whether the connections offered permessage-deflate.
	Compression bool `json:"compression"`
	// Negotiated counts the opened connections whose server accepted it;
	// NegotiatedBy says the same in a word: "all", "some" or "none" (empty
	// when not offered). ContextTakeover counts those of them whose
	// server did not promise server_no_context_takeover.
	Negotiated      int64  `json:"compression_negotiated"`
	NegotiatedBy    string `json:"compression_negotiated_by,omitempty"`
	ContextTakeover int64  `json:"context_takeover"`
	// Messages counts WebSocket data messages; CompressedMessages those
	// that came compressed (a server sends short ones as they are).
	Messages           int64 `json:"messages"`
	CompressedMessages int64 `json:"compressed_messages"`
	// WireBytes is every frame as received, headers included: what the
	// server sent over TCP after the handshake. MessageBytes is the data
	// messages' payloads after inflation.
	WireBytes    int64 `json:"wire_bytes"`
	MessageBytes int64 `json:"message_bytes"`
	// Ratio is MessageBytes over WireBytes: the compression ratio, a
	// little under 1 without compression (the frame headers).
	Ratio float64 `json:"ratio"`
}

// PublishResult is about the API requests of fanout and channels.
type PublishResult struct {
	Method       string  `json:"method"`
	Publishers   int     `json:"publishers"`
	Batch        int     `json:"batch"`
	Size         int     `json:"size"`
	Payload      string  `json:"payload"`     // PayloadPad or PayloadJSON
	TargetRate   float64 `json:"target_rate"` // 0: as fast as possible
	Requests     int64   `json:"requests"`
	Publications uint64  `json:"publications"` // accepted; broadcasts count once
	Errors       int64   `json:"errors"`
	Seconds      float64 `json:"seconds"`
	PerSecond    float64 `json:"per_second"`
	// Latency is of whole API requests, as the publisher saw them.
	Latency Percentiles `json:"latency"`
}

// DeliveryResult is about what the subscribers received.
type DeliveryResult struct {
	Subscribers int64 `json:"subscribers"`
	Expected    int64 `json:"expected"`
	Received    int64 `json:"received"`
	// Lost counts publications a subscriber never got, summed over
	// subscribers; LossySubscribers is how many missed any.
	Lost             int64 `json:"lost"`
	LossySubscribers int64 `json:"lossy_subscribers"`
	// OutOfOrder counts publications that came after a later one of the
	// same publisher (or twice).
	OutOfOrder int64 `json:"out_of_order"`
	// Seconds runs from the first publish to the last delivery.
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
	// Latency is from the publisher's clock reading, taken just before
	// the API request, to the subscriber's reading of the frame.
	Latency Percentiles `json:"latency"`
}

// ServerResult is what /proc says about the server process (--pid), or
// about the processes of several nodes together.
type ServerResult struct {
	// PID is the process of a single server, PIDs those of several
	// nodes, whose figures below are sums: the CPU per delivery, per
	// connect, per subscribe and per disconnect are all their CPU time.
	// Nodes has each of several on its own.
	PID          int          `json:"pid,omitempty"`
	PIDs         []int        `json:"pids,omitempty"`
	Nodes        []ServerNode `json:"nodes,omitempty"`
	RSSBefore    int64        `json:"rss_before"`
	RSSAfterOpen int64        `json:"rss_after_open"`
	RSSEnd       int64        `json:"rss_end"`
	// RSSPerConn is the growth of RSS per opened connection: up to
	// RSSEnd in idle (after the hold), up to RSSAfterOpen elsewhere; not
	// in churn, which has no moment with every connection open (nor
	// RSSAfterOpen).
	RSSPerConn float64 `json:"rss_per_conn"`
	// CPU is over the measured phase: the hold (idle), publishing and
	// draining (fanout, channels), opening (connect) or the whole run,
	// until every connection was closed (churn).
	CPUSeconds           float64 `json:"cpu_seconds"`
	CPUPercent           float64 `json:"cpu_percent"`
	CPUPerDeliveryMicros float64 `json:"cpu_per_delivery_us,omitempty"`
	CPUPerConnectMicros  float64 `json:"cpu_per_connect_us,omitempty"`
	// CPUPerSubscribeMicros and CPUPerDisconnectMicros are churn's: all
	// the CPU time over subscribes, and over disconnects. Each
	// connection costs a connect, a subscribe and a disconnect (and an
	// unsubscribe), so both are the cost of one whole visit; they differ
	// by the failures.
	CPUPerSubscribeMicros  float64 `json:"cpu_per_subscribe_us,omitempty"`
	CPUPerDisconnectMicros float64 `json:"cpu_per_disconnect_us,omitempty"`
}

// ServerNode is one of several server processes, in the order of
// --pid: the node of URL (the same position in --url), or a process
// with no URL of its own (one that only serves the API).
type ServerNode struct {
	PID          int     `json:"pid"`
	URL          string  `json:"url,omitempty"`
	RSSBefore    int64   `json:"rss_before"`
	RSSAfterOpen int64   `json:"rss_after_open"`
	RSSEnd       int64   `json:"rss_end"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	CPUPercent   float64 `json:"cpu_percent"`
}

// ReconnectResult is about the connections that lost their server and
// came back (Config.Reconnect).
type ReconnectResult struct {
	// FirstWaitMillis and MaxWaitMillis bound the wait before each
	// attempt: the first is random in [FirstWait/2, FirstWait], each next
	// one twice as long, up to MaxWait.
	FirstWaitMillis float64 `json:"first_wait_ms"`
	MaxWaitMillis   float64 `json:"max_wait_ms"`
	// Dropped counts the connections that lost their server (a
	// connection that lost it twice counts twice), Reconnected those
	// that were connected and subscribed again, Failed those that were
	// not by the end of the run.
	Dropped     int64 `json:"dropped"`
	Reconnected int64 `json:"reconnected"`
	Failed      int64 `json:"failed"`
	// Attempts counts the dials, FailedAttempts those that did not end
	// subscribed (the reasons are in the errors).
	Attempts       int64 `json:"attempts"`
	FailedAttempts int64 `json:"failed_attempts"`
	// Latency is per connection, from the moment it saw its server go to
	// the reply to its subscribe on the next one.
	Latency Percentiles `json:"latency"`
	// Seconds runs from the first drop to the last reconnect: how long
	// until all were back.
	Seconds float64 `json:"seconds"`
}

// ChurnCounts counts churn's connections by what became of them. Every
// connect ends in a disconnect (this side closed it) or a drop (the
// server or the network did): Connects = Disconnects + Dropped once a
// run is over.
type ChurnCounts struct {
	Connects int64 `json:"connects"`
	// ConnectErrors are attempts that got no connection: the dial, the
	// WebSocket handshake or the connect command failed.
	ConnectErrors int64 `json:"connect_errors"`
	Subscribes    int64 `json:"subscribes"`
	// SubscribeRefused counts subscribe commands the server answered
	// with an error; the connection stays its time all the same.
	SubscribeRefused int64 `json:"subscribe_refused"`
	// Unsubscribes counts unsubscribe commands sent before a disconnect
	// (Config.Unsubscribe).
	Unsubscribes int64 `json:"unsubscribes"`
	Disconnects  int64 `json:"disconnects"`
	Dropped      int64 `json:"dropped"`
}

func (c *ChurnCounts) add(o ChurnCounts) {
	c.Connects += o.Connects
	c.ConnectErrors += o.ConnectErrors
	c.Subscribes += o.Subscribes
	c.SubscribeRefused += o.SubscribeRefused
	c.Unsubscribes += o.Unsubscribes
	c.Disconnects += o.Disconnects
	c.Dropped += o.Dropped
}

// failures are every failure: connects, refused subscribes and drops.
func (c ChurnCounts) failures() int64 { return c.ConnectErrors + c.SubscribeRefused + c.Dropped }

// ChurnResult is about churn's connections coming and going.
type ChurnResult struct {
	// Conns is how many connections are kept at a time, over Users
	// users and Channels channels.
	Conns    int `json:"conns"`
	Users    int `json:"users"`
	Channels int `json:"channels"`
	// HoldSeconds is the mean stay: each is uniform in [hold/2,
	// 3·hold/2].
	HoldSeconds float64 `json:"hold_seconds"`
	TargetRate  float64 `json:"target_rate"` // connects/s; 0: as fast as connections leave
	Unsubscribe bool    `json:"unsubscribe"`
	ChurnCounts
	// Seconds runs from the first connect to the last disconnect (the
	// connections open at the end of the duration included).
	Seconds              float64 `json:"seconds"`
	ConnectsPerSecond    float64 `json:"connects_per_second"`
	SubscribesPerSecond  float64 `json:"subscribes_per_second"`
	DisconnectsPerSecond float64 `json:"disconnects_per_second"`
	// ConnectLatency runs from the dial to the connect reply,
	// SubscribeLatency from the subscribe command to its reply.
	ConnectLatency   Percentiles `json:"connect_latency"`
	SubscribeLatency Percentiles `json:"subscribe_latency"`
	Nodes            []NodeChurn `json:"nodes"`
}

// NodeChurn is one node's share of the churn, in the order of the URLs.
type NodeChurn struct {
	URL string `json:"url"`
	// PID is the node's process when watched; its CPU time is over the
	// whole run.
	PID int `json:"pid,omitempty"`
	ChurnCounts
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	CPUPercent float64 `json:"cpu_percent,omitempty"`
}

// ClientResult is the load tool's own CPU (all its processes) over the
// measured phase, to tell whether it kept up.
type ClientResult struct {
	CPUSeconds           float64 `json:"cpu_seconds"`
	CPUPercent           float64 `json:"cpu_percent"`
	CPUPerDeliveryMicros float64 `json:"cpu_per_delivery_us,omitempty"`
}
