package gyre

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/delta/fossil"
	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// Payload variants of a publication for subscribers with fossil delta
// compression: the full payload (first publication, or after a gap) or a
// delta against the previous publication. On JSON connections both travel
// as a JSON string.
const (
	variantPlain = iota
	variantFull
	variantDelta
	numVariants
)

// Shapes of a push on the wire: in a Reply with the channel name (a
// bidirectional connection), bare (a unidirectional one), or in a Reply
// with the channel's number instead of its name (a subscription with
// channel compaction).
const (
	shapeReply = iota
	shapeUni
	shapeCompact
	numShapes
)

// encodedPush encodes one push lazily, once per wire variant, for a whole
// fan-out.
type encodedPush struct {
	// pub and channel are what the push carries; push is made of them
	// when a message needs it (protoPush). A push made otherwise (a join,
	// a leave, a pattern's) is set from the start, with pub nil.
	pub     *broker.Publication
	channel string
	push    *protocol.Push
	// bodies, when set, encodes pub once for all the channels it goes
	// to (a broadcast).
	bodies *pubBodies
	// data is the payload that JSON variants embed raw; it must be JSON.
	data []byte
	// canDelta: the publication may go as a delta, against prev, the
	// payload of its predecessor.
	canDelta bool
	prev     []byte
	delta    []byte
	// msgs by [protocol type][shape][variant]
	msgs [2][numShapes][numVariants][]byte
	// channelID is the number of the channel in shapeCompact messages
	// (subList.id).
	channelID int64
	// epoch is the epoch of the stream the publication is in, as the
	// broker handed it over; "" when it gave none.
	epoch string
	// sizeHint pre-sizes buffers so that the JSON encoder does not grow
	// them field by field.
	sizeHint   int
	checked    bool // data was checked for JSON
	dataIsJSON bool
	err        error
	// frames holds the messages as WebSocket frames for clients with
	// permessage-deflate, made lazily like msgs; nil until one is made.
	frames *pushFrames
}

// pushFrames are a push's WebSocket frames for clients that negotiated
// permessage-deflate, by [protocol type][shape][variant], each compressed
// once for all of them. They are made with by; a client whose
// Compression differs (a reload changed the settings) gets a frame of its
// own.
type pushFrames struct {
	by *websocket.Compression
	f  [2][numShapes][numVariants][]byte
}

// forClient returns the push in the form c's queue takes: the encoded
// message, or for a client with permessage-deflate its frame.
func (e *encodedPush) forClient(c *Client, shape uint8, variant int) []byte {
	if c.deflate == nil {
		return e.get(c.proto, shape, variant)
	}
	return e.frame(c.proto, c.deflate, shape, variant)
}

// frame is get as a WebSocket frame made with z, compressed or not as z
// decides, once per fan-out.
func (e *encodedPush) frame(t protocol.Type, z *websocket.Compression, shape uint8, variant int) []byte {
	if e.frames != nil && e.frames.by == z {
		if f := e.frames.f[t][shape][variant]; f != nil {
			return f
		}
	}
	msg := e.get(t, shape, variant)
	if msg == nil {
		return nil
	}
	f := z.AppendFrame(nil, t == protocol.TypeProtobuf, msg)
	if e.frames == nil {
		e.frames = &pushFrames{by: z}
	}
	if e.frames.by == z {
		e.frames.f[t][shape][variant] = f
	}
	return f
}

func (e *encodedPush) get(t protocol.Type, shape uint8, variant int) []byte {
	if e.removed() {
		// A removal of a map key carries no value, and ends the key's
		// delta chain: every subscriber takes it as it is.
		variant = variantPlain
	}
	if variant == variantDelta {
		if e.delta == nil {
			e.delta = fossil.AppendCreate(nil, e.prev, e.data)
		}
		if len(e.delta) >= len(e.data) {
			variant = variantFull // unrelated payloads: the delta saves nothing
		}
	}
	if t == protocol.TypeProtobuf && variant == variantFull {
		variant = variantPlain // protobuf carries the full payload as is
	}
	if m := e.msgs[t][shape][variant]; m != nil {
		return m
	}
	var push *protocol.Push
	switch {
	case variant != variantPlain:
		push = e.variantPush(t, variant)
	case t == protocol.TypeJSON:
		if !e.checked {
			e.checked, e.dataIsJSON = true, len(e.data) == 0 || e.validJSON()
		}
		if !e.dataIsJSON {
			e.err = errNotJSON
			return nil
		}
	}
	if push == nil && shape == shapeReply && e.bodies != nil {
		return e.fromBody(t)
	}
	if push == nil {
		push = e.protoPush()
	}
	m := make([]byte, 0, e.sizeHint+len(push.Pub.GetData()))
	switch shape {
	case shapeUni:
		m, e.err = protocol.AppendPush(m, t, push)
	case shapeCompact:
		// A fan-out carries a publication, a join or a leave.
		compact := &protocol.Push{Id: e.channelID, Pub: push.Pub, Join: push.Join, Leave: push.Leave}
		m, e.err = protocol.AppendReply(m, t, &protocol.Reply{Push: compact})
	default:
		m, e.err = protocol.AppendReply(m, t, &protocol.Reply{Push: push})
	}
	e.msgs[t][shape][variant] = m
	return m
}

// variantPush builds the push of a delta subscriber: full payload or delta,
// as a JSON string on JSON connections. The delta is computed once per
// fan-out.
func (e *encodedPush) variantPush(t protocol.Type, variant int) *protocol.Push {
	orig := e.protoPush().Pub
	pub := &protocol.Publication{Info: orig.Info, Offset: orig.Offset, Tags: orig.Tags, Time: orig.Time, Channel: orig.Channel,
		Key: orig.Key, Removed: orig.Removed, Score: orig.Score, Version: orig.Version}
	data := e.data
	if variant == variantDelta {
		data = e.delta
		pub.Delta = true
	}
	if t == protocol.TypeJSON {
		data = protocol.AppendJSONString(nil, data)
	}
	pub.Data = data
	return &protocol.Push{Channel: e.protoPush().Channel, Pub: pub}
}

// offset, tags and removed read the publication the push carries (none
// for a join or a leave).
func (e *encodedPush) offset() uint64 {
	if e.push != nil {
		return e.push.Pub.GetOffset()
	}
	return e.pub.Offset
}

func (e *encodedPush) tags() map[string]string {
	if e.push != nil {
		return e.push.Pub.GetTags()
	}
	return e.pub.Tags
}

func (e *encodedPush) removed() bool {
	if e.push != nil {
		return e.push.Pub.GetRemoved()
	}
	return e.pub.Removed
}

// protoPush is the push as a protocol message, made on first use.
func (e *encodedPush) protoPush() *protocol.Push {
	if e.push == nil {
		// Push and publication in one allocation.
		pp := new(pushOfPub)
		setProtoPub(&pp.pub, e.pub)
		pp.push.Channel, pp.push.Pub = e.channel, &pp.pub
		e.push = &pp.push
	}
	return e.push
}

// fromBody makes the plain message of protocol t around the publication
// encoded once by e.bodies.
func (e *encodedPush) fromBody(t protocol.Type) []byte {
	body, err := e.bodies.of(t, e.pub)
	var m []byte
	if err == nil {
		m, err = protocol.AppendChannelPush(make([]byte, 0, len(body)+len(e.channel)+32), t, e.channel, body)
	}
	if err != nil {
		e.err = err
		return nil
	}
	e.msgs[t][shapeReply][variantPlain] = m
	return m
}

// validJSON reports whether e's payload is JSON, once for all the
// channels of a broadcast when e.bodies is set.
func (e *encodedPush) validJSON() bool {
	if e.bodies != nil {
		return e.bodies.validJSON(e.pub)
	}
	return json.Valid(e.data)
}

// pubBodies holds what is made of the last publication it was asked
// about, to serve every channel it goes to: a broadcast's publications
// differ in nothing but their channel. Its encodings, by protocol type,
// are wrapped into each channel's push: encoding each whole was a tenth
// of the server's CPU on broadcasts to personal channels, and checking
// the payload for JSON each time a twentieth (docs/benchmarks.md, "Side
// by side with Centrifugo").
type pubBodies struct {
	pub     *broker.Publication
	enc     [2][]byte
	errs    [2]error
	checked bool // isJSON holds
	isJSON  bool
}

// use makes pb p's, unless it is already (or of a publication that
// encodes alike).
func (pb *pubBodies) use(p *broker.Publication) {
	if pb.pub == nil || !samePublication(pb.pub, p) {
		*pb = pubBodies{pub: p}
	}
}

// validJSON reports whether p's payload is JSON. Payloads are never
// modified once published.
func (pb *pubBodies) validJSON(p *broker.Publication) bool {
	pb.use(p)
	if !pb.checked {
		pb.checked, pb.isJSON = true, json.Valid(p.Data)
	}
	return pb.isJSON
}

// of is p's encoding for protocol t.
func (pb *pubBodies) of(t protocol.Type, p *broker.Publication) ([]byte, error) {
	pb.use(p)
	if pb.enc[t] == nil && pb.errs[t] == nil {
		var pub protocol.Publication
		setProtoPub(&pub, p)
		pb.enc[t], pb.errs[t] = protocol.AppendPublication(nil, t, &pub)
	}
	return pb.enc[t], pb.errs[t]
}

// samePublication reports whether a and b encode alike, channel aside.
func samePublication(a, b *broker.Publication) bool {
	return a == b || a.Offset == b.Offset && a.Time == b.Time && a.Info == b.Info && a.Channel == b.Channel &&
		a.Key == b.Key && a.Removed == b.Removed && a.Score == b.Score && a.Version == b.Version &&
		bytes.Equal(a.Data, b.Data) && maps.Equal(a.Tags, b.Tags)
}

// publicationPush is the push of pub, to be encoded lazily. delta and
// prev are what the broker handed over with it: a publication marked for
// delta whose predecessor is known may go as a delta against it.
func publicationPush(channel string, pub *broker.Publication, delta bool, prev *broker.Publication) encodedPush {
	e := encodedPush{pub: pub, channel: channel, data: pub.Data, sizeHint: pushSizeHint(channel, pub)}
	if delta && prev != nil {
		e.canDelta, e.prev = true, prev.Data
	}
	return e
}

// pushSizeHint is a little more than the encoding of a publication push,
// less its data.
func pushSizeHint(channel string, pub *broker.Publication) int {
	n := 128 + 2*len(channel)
	if pub.Info != nil {
		n += 64 + len(pub.Info.ClientID) + len(pub.Info.UserID) + len(pub.Info.ConnInfo) + len(pub.Info.ChanInfo)
	}
	for k, v := range pub.Tags {
		n += 6 + len(k) + len(v)
	}
	return n
}

// errNotJSON: a payload that is not JSON cannot be embedded for a JSON
// client (binary data published by a protobuf client or with b64data).
var errNotJSON = errors.New("gyre: payload is not JSON")

func toProtoInfo(info *broker.ClientInfo) *protocol.ClientInfo {
	if info == nil {
		return nil
	}
	return &protocol.ClientInfo{User: info.UserID, Client: info.ClientID, ConnInfo: info.ConnInfo, ChanInfo: info.ChanInfo}
}

// pushOfPub is a push and the publication it carries.
type pushOfPub struct {
	push protocol.Push
	pub  protocol.Publication
}

func toProtoPub(p *broker.Publication) *protocol.Publication {
	pub := new(protocol.Publication)
	setProtoPub(pub, p)
	return pub
}

// setProtoPub sets dst, a new Publication, to what p holds.
func setProtoPub(dst *protocol.Publication, p *broker.Publication) {
	*dst = protocol.Publication{
		Data:    p.Data,
		Info:    toProtoInfo(p.Info),
		Offset:  p.Offset,
		Tags:    p.Tags,
		Time:    p.Time,
		Channel: p.Channel,
		Key:     p.Key,
		Removed: p.Removed,
		Score:   p.Score,
		Version: p.Version,
	}
}
