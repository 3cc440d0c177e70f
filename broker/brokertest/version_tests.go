package brokertest

import (
	"reflect"
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// testVersion: in a channel with history a publication whose version is
// not above the last one of its epoch (or of any epoch, when it names
// none) is dropped, answered as suppressed at the stream's top; a new
// epoch starts again; without history versions are not looked at.
// Dropped publications are neither delivered nor stored.
func testVersion(t *testing.T, e *brokerEnv) {
	ch, want := publishVersions(t, e.streamEnv)
	if got := deliveredData(e.rec.waitPubs(t, ch, len(want))); !reflect.DeepEqual(got, want) {
		t.Fatalf("delivered %q, want %q", got, want)
	}
}

// publishVersions publishes versioned publications into a new channel,
// checks which were suppressed and that history holds the others, and
// returns the channel and the data of those kept, in order.
func publishVersions(t *testing.T, e *streamEnv) (string, []string) {
	t.Helper()
	ch := e.channel()
	versioned := func(v uint64, epoch string) broker.PublishOptions {
		o := withHistory
		o.Version, o.VersionEpoch = v, epoch
		return o
	}
	stale := func(data string, v uint64, epoch string, top broker.StreamPosition) {
		t.Helper()
		sp, suppressed, err := e.publishOne(ch, []byte(data), versioned(v, epoch))
		if err != nil || !suppressed || sp != top {
			t.Fatalf("version %d epoch %q: position %+v suppressed %v error %v; want %+v, true, nil", v, epoch, sp, suppressed, err, top)
		}
	}
	e.publish(ch, "v2", versioned(2, "a"))
	top := e.publish(ch, "v3", versioned(3, "a"))
	stale("v3 again", 3, "a", top)
	stale("v1", 1, "a", top)
	stale("v2 no epoch", 2, "", top)
	top = e.publish(ch, "v1 epoch b", versioned(1, "b"))
	stale("v1 epoch b again", 1, "b", top)
	e.publish(ch, "unversioned", withHistory)
	top = e.publish(ch, "v5 no epoch", versioned(5, ""))
	stale("v4 no epoch", 4, "", top)

	want := []string{"v2", "v3", "v1 epoch b", "unversioned", "v5 no epoch"}
	pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	checkOffsets(t, pubs, span(1, uint64(len(want)))...)
	if got := pubData(pubs); !reflect.DeepEqual(got, want) {
		t.Errorf("history holds %q, want %q", got, want)
	}

	plain := e.channel()
	for _, d := range []string{"a", "b"} {
		if _, suppressed, err := e.publishOne(plain, []byte(d), broker.PublishOptions{Version: 1}); err != nil || suppressed {
			t.Fatalf("without history: suppressed %v error %v", suppressed, err)
		}
	}
	return ch, want
}
