package api_test

import (
	"testing"

	"github.com/gyrehq/gyre/server/api"
)

// TestPublishVersion: publish and broadcast pass version and
// version_epoch on: a stale publication is answered with the channel's
// top and reaches nobody.
func TestPublishVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	c, _ := e.dial("vera")
	c.MustSubscribe("hist:ver")

	var r publishResult
	e.call("publish", `{"channel":"hist:ver","data":{"v":5},"version":5,"version_epoch":"x"}`, &r)
	if r.Offset != 1 {
		t.Fatalf("first: offset %d, want 1", r.Offset)
	}
	var stale publishResult
	e.call("publish", `{"channel":"hist:ver","data":{"v":4},"version":4,"version_epoch":"x"}`, &stale)
	if stale != r {
		t.Fatalf("stale version: result %+v, want the top %+v", stale, r)
	}
	var br struct {
		Responses []struct {
			Result publishResult `json:"result"`
		} `json:"responses"`
	}
	e.call("broadcast", `{"channels":["hist:ver"],"data":{"v":5},"version":5,"version_epoch":"x"}`, &br)
	if len(br.Responses) != 1 || br.Responses[0].Result != r {
		t.Fatalf("stale broadcast: %+v, want the top %+v", br, r)
	}
	e.call("publish", `{"channel":"hist:ver","data":{"v":6},"version":6,"version_epoch":"x"}`, nil)
	pubs := c.WaitPubs("hist:ver", 2)
	jsonEq(t, pubs[0].Data, `{"v":5}`)
	jsonEq(t, pubs[1].Data, `{"v":6}`)
}
