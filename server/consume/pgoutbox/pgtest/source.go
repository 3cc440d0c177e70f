package pgtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gyrehq/gyre/server/config"
	"github.com/gyrehq/gyre/server/consume/consumetest"
)

// Source is the outbox table as the consumers' shared suite drives it
// (consumetest.Run): a place is a table of its own with the NOTIFY trigger
// of docs/consumers.md, on the shared server or, when private, on a
// server of the test's own.
//
// What the suite's messages become:
//   - a message with a method is a row of that method, the request its
//     payload; one without, a row whose method is empty and whose payload
//     is the whole {"method", "payload"} body;
//   - a body that is not JSON, which a JSONB column cannot hold, is stored
//     as a JSON string of its text: a payload the consumer cannot run,
//     skipped as the malformed message it is;
//   - the outbox has no publication data mode: Place.Consumer says so.
//
// The outbox has no consumer groups: nodes share a table's partitions
// through advisory locks named after the consumer, so that nodes of one
// group are nodes whose consumer has the same name. Place.Consumer names
// the consumer after the group and the table: the same for the nodes of a
// group, and apart from the consumers of other tests, which may share the
// server (advisory locks are the server's, not the table's).
func Source() consumetest.Source { return source{} }

type source struct{}

func (source) Type() string { return "postgresql" }

func (source) Open(t testing.TB, partitions int, private bool) consumetest.Place {
	t.Helper()
	p := &place{}
	dsn := ""
	if private {
		p.server = Start(t)
		dsn = p.server.DSN
	} else {
		dsn = DSN(t)
	}
	p.table = NewTable(t, dsn, partitions)
	p.channel = p.table.Notify(t)
	return p
}

type place struct {
	table   *Table
	channel string
	server  *Server // nil on the shared server
}

func (p *place) Consumer(_, group string, publicationMode bool) (config.Consumer, bool) {
	if publicationMode {
		return config.Consumer{}, false
	}
	pc := p.table.Consumer()
	pc.PartitionNotificationChannel = p.channel
	return Entry(group+"_"+p.table.Name, pc), true
}

func (p *place) Partitions() int { return p.table.Partitions }

func (p *place) Produce(t testing.TB, partition int, msgs ...consumetest.Msg) {
	t.Helper()
	rows := make([]Row, len(msgs))
	for i, m := range msgs {
		payload := m.Payload
		if !json.Valid(payload) {
			payload, _ = json.Marshal(string(payload))
		}
		rows[i] = Row{Partition: partition, Method: m.Method, Payload: payload}
	}
	p.table.Insert(t, rows...)
}

func (p *place) Outage(t testing.TB, d time.Duration) {
	t.Helper()
	if p.server == nil {
		t.Fatal("pgtest: Outage on a place of the shared server: open it private")
	}
	p.server.Outage(t, d)
}

// Entry is the consumers[] entry of a postgresql consumer called name
// reading pc, enabled, with every other key at its default as a config
// file would leave it (so that it passes config.Validate).
func Entry(name string, pc config.PostgresConsumer) config.Consumer {
	c, _, err := config.LoadBytes([]byte(`{"consumers": [{"name": "x", "type": "postgresql"}]}`), config.FormatJSON)
	if err != nil {
		panic("pgtest: the defaults of a consumer: " + err.Error())
	}
	e := c.Consumers[0]
	e.Name, e.Enabled, e.Postgres = name, true, pc
	return e
}
