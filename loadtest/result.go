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
	Sources     int             `json:"source_addrs,omitempty"`
	Seconds     float64         `json:"seconds"`
	Connections ConnResult      `json:"connections"`
	Received    TrafficResult   `json:"received"`
	Publish     *PublishResult  `json:"publish,omitempty"`
	Delivery    *DeliveryResult `json:"delivery,omitempty"`
	Server      *ServerResult   `json:"server,omitempty"`
	Client      ClientResult    `json:"client"`
	Errors      []ErrorCount    `json:"errors,omitempty"`
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

// ServerResult is what /proc says about the server process (--pid).
type ServerResult struct {
	PID          int   `json:"pid"`
	RSSBefore    int64 `json:"rss_before"`
	RSSAfterOpen int64 `json:"rss_after_open"`
	RSSEnd       int64 `json:"rss_end"`
	// RSSPerConn is the growth of RSS per opened connection: up to
	// RSSEnd in idle (after the hold), up to RSSAfterOpen elsewhere.
	RSSPerConn float64 `json:"rss_per_conn"`
	// CPU is over the measured phase: the hold (idle), publishing and
	// draining (fanout, channels) or opening (connect).
	CPUSeconds           float64 `json:"cpu_seconds"`
	CPUPercent           float64 `json:"cpu_percent"`
	CPUPerDeliveryMicros float64 `json:"cpu_per_delivery_us,omitempty"`
	CPUPerConnectMicros  float64 `json:"cpu_per_connect_us,omitempty"`
}

// ClientResult is the load tool's own CPU (all its processes) over the
// measured phase, to tell whether it kept up.
type ClientResult struct {
	CPUSeconds           float64 `json:"cpu_seconds"`
	CPUPercent           float64 `json:"cpu_percent"`
	CPUPerDeliveryMicros float64 `json:"cpu_per_delivery_us,omitempty"`
}
