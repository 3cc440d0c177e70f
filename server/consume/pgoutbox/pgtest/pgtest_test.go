package pgtest

import (
	"context"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// TestTable: rows inserted are there, in order, and JSONB keeps them.
func TestTable(t *testing.T) {
	tb := NewTable(t, DSN(t), 2)
	tb.Insert(t, Row{Partition: 1, Method: "publish", Payload: []byte(`{"channel":"a","data":{}}`)},
		Row{Partition: 0, Payload: []byte(`{"method":"publish","payload":{"channel":"b","data":1}}`)})
	if n := tb.Count(t); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
	rows, err := tb.Pool().Query(context.Background(), "SELECT partition, method, payload FROM "+tb.Name+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var p int
		var m string
		var payload []byte
		if err := rows.Scan(&p, &m, &payload); err != nil {
			t.Fatal(err)
		}
		got = append(got, m+" "+string(payload))
	}
	want := []string{`publish {"data": {}, "channel": "a"}`, ` {"method": "publish", "payload": {"data": 1, "channel": "b"}}`}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

// TestOutage: a server killed and started again keeps what was committed
// and answers on the same DSN.
func TestOutage(t *testing.T) {
	s := Start(t)
	tb := NewTable(t, s.DSN, 1)
	tb.Insert(t, Row{Payload: []byte(`{}`)})
	s.Outage(t, 100*time.Millisecond)
	if n := tb.Count(t); n != 1 {
		t.Fatalf("%d rows after the outage, want 1", n)
	}
}
