package redis

import (
	"encoding/binary"
	"fmt"
	"iter"
	"strconv"
	"unsafe"

	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
	"github.com/planetscale/vtprotobuf/protohelpers"
	"github.com/redis/rueidis"
)

// Grouped publications.
//
// A broadcast publishes one publication into many channels. As one
// PUBLISH per channel it costs Redis a command, and each subscribed node a
// pub/sub message to read and decode, per channel. So the plain items of
// one PublishMany (see plainItem; without pattern scope) that carry the
// same message into channels of one shard go instead as one PUBLISH, to
// the shard's group pub/sub channel (<base>g.<shard>), with the channels'
// names. Every node subscribes each shard's group channel on the shard's
// connection, before the shard's channels, and hands the publication to
// the named channels it has subscribed.
//
// Order holds: a channel's own messages and the grouped ones that name it
// come over one connection from one Redis, which sends them in the order
// it ran the commands; and only an item whose channel has no other item
// in the call is grouped, so that no item overtakes another of its
// channel. A group channel subscribed again after an interruption comes
// before the channels, whose losses are reported where their own
// subscriptions are confirmed; from there on their grouped publications
// arrive too. A grouped message that cannot be decoded is reported as a
// loss of every channel of the shard, as the channels it named are not
// known.
const (
	// maxGroup and maxGroupNames bound the channels one grouped message
	// names, in number and in bytes of names: each node reads and
	// dispatches the whole message before anything after it.
	maxGroup      = 1024
	maxGroupNames = 32 << 10
)

// groupName is the pub/sub channel of the grouped publications of shard
// shard, whose key base is base.
func groupName(base string, shard int) string {
	return base + groupInfix + strconv.Itoa(shard)
}

// groupable reports whether the call may go in a group: a plain item
// that is to be sent, without a pattern scope, whose message (an
// encoder's) is shared with the items that publish the same.
func (c *publishCall) groupable() bool {
	return c.client >= 0 && c.plain && c.store == nil && c.scopePubSub == "" && c.msg != ""
}

// groupPlain makes the groupable calls of each shard that carry the same
// message, and whose channels appear once in calls, one PUBLISH to the
// shard's group channel, sent by the group's first call; the others are
// not sent (client -1) and take the first's result (settleGroup). Groups
// are cut at maxGroup channels and maxGroupNames bytes of names.
func (b *Broker) groupPlain(calls []publishCall) {
	// Nothing to group unless two groupable calls have different
	// channels: a batch into one channel is the common case.
	first, several := "", false
	for i := range calls {
		if c := &calls[i]; c.groupable() {
			if first == "" {
				first = c.item.Channel
			} else if c.item.Channel != first {
				several = true
				break
			}
		}
	}
	if !several || b.shards[0][0].group == "" {
		return
	}
	seen := make(map[string]int, len(calls))
	for i := range calls {
		seen[calls[i].item.Channel]++
	}
	type key struct {
		client, shard int
		msg           *byte
		size          int
	}
	type group struct {
		lead  *publishCall
		names int
	}
	open := make(map[key]group)
	var leads []*publishCall
	for i := range calls {
		c := &calls[i]
		if !c.groupable() || seen[c.item.Channel] > 1 {
			continue
		}
		k := key{c.client, c.shard, unsafe.StringData(c.msg), len(c.msg)}
		g, ok := open[k]
		size := len(c.item.Channel)
		if !ok || len(g.lead.group)+1 >= maxGroup || g.names+size > maxGroupNames {
			open[k] = group{lead: c, names: size}
			leads = append(leads, c)
			continue
		}
		g.lead.group = append(g.lead.group, c)
		g.names += size
		open[k] = g
		c.client = -1
	}
	for _, lead := range leads {
		if len(lead.group) > 0 {
			lead.pubsub = b.shards[lead.client][lead.shard].group
			lead.msg = groupMessage(lead)
		}
	}
}

// groupMessage is the message of the group led by lead: lead's message
// with the channels field (12) of every channel of the group.
func groupMessage(lead *publishCall) string {
	names := 0
	for c := range lead.members() {
		names += protohelpers.SizeOfVarint(uint64(len(c.item.Channel))) + len(c.item.Channel)
	}
	out := make([]byte, 0, len(lead.msg)+1+binary.MaxVarintLen64+names)
	out = append(out, lead.msg...)
	out = append(out, '\x62')
	out = binary.AppendUvarint(out, uint64(names))
	for c := range lead.members() {
		out = binary.AppendUvarint(out, uint64(len(c.item.Channel)))
		out = append(out, c.item.Channel...)
	}
	return rueidis.BinaryString(out)
}

// members yields the calls of lead's group, lead first.
func (c *publishCall) members() iter.Seq[*publishCall] {
	return func(yield func(*publishCall) bool) {
		if !yield(c) {
			return
		}
		for _, o := range c.group {
			if !yield(o) {
				return
			}
		}
	}
}

// settleGroup gives the calls of c's group c's result: the one PUBLISH
// that carried them all succeeded or failed.
func (c *publishCall) settleGroup() {
	for _, o := range c.group {
		o.item.Err = c.item.Err
	}
}

// addGroup hands a grouped publication to the runs of the channels it
// names that this node has subscribed. The names are read out of the
// message's channels string, which is the message's own copy. Runs are
// handed over every groupFlush publications, so that a queue of grouped
// messages does not grow the dispatcher's buffers to all they carry.
func (d *dispatcher) addGroup(msg *wirepb.Message) error {
	if msg.Type != wirepb.Message_PUBLICATION || msg.Channels == "" {
		return fmt.Errorf("%w: grouped message of type %d with %d bytes of channels", errUndecodable, msg.Type, len(msg.Channels))
	}
	rp, err := decodeRunPublication(msg)
	if err != nil {
		return fmt.Errorf("%w: %w", errUndecodable, err)
	}
	// The names are picked under the lock, and handed over after it:
	// the handler may unsubscribe.
	wanted := d.wanted[:0]
	defer func() {
		clear(wanted)
		d.wanted = wanted[:0]
	}()
	s := d.s
	s.mu.Lock()
	for names := msg.Channels; names != ""; {
		var channel string
		var ok bool
		if channel, names, ok = nextName(names); !ok {
			s.mu.Unlock()
			return fmt.Errorf("%w: grouped message: channel list cut short", errUndecodable)
		}
		if _, ok := s.channels[channel]; ok {
			wanted = append(wanted, channel)
		}
	}
	s.mu.Unlock()
	for _, channel := range wanted {
		if len(d.pubs) >= groupFlush {
			d.flushRuns()
		}
		d.addPublication("", channel, rp)
	}
	return nil
}

// groupFlush is how many publications the dispatcher gathers from grouped
// messages before it hands them over.
const groupFlush = 1024

// nextName splits the first name off a list of names each preceded by its
// length as a varint.
func nextName(list string) (name, rest string, ok bool) {
	// Read in place: Uvarint only reads.
	n, k := binary.Uvarint(unsafe.Slice(unsafe.StringData(list), len(list)))
	if k <= 0 || n > uint64(len(list)-k) {
		return "", "", false
	}
	end := k + int(n)
	return list[k:end], list[end:], true
}

// loseShard reports every channel of the shard lost, after the runs
// gathered so far: a grouped message that could not be decoded may have
// carried a publication of any of them.
func (d *dispatcher) loseShard() {
	d.flushRuns()
	s := d.s
	s.mu.Lock()
	for ch := range s.channels {
		d.lost = append(d.lost, ch)
	}
	s.mu.Unlock()
}
