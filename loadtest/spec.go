package loadtest

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/token"
)

// workerSpec is what a worker (this process or a child) needs to open
// and hold its share of the connections: numbers First to First+Count-1
// (in churn, the slots that connections come and go in).
type workerSpec struct {
	Scenario string `json:"scenario"`
	// URLs are the server's endpoints, one per node: connection i dials
	// URLs[i%len] (churn: the worker's connections in turn).
	URLs        []string      `json:"urls"`
	Protocol    protocol.Type `json:"protocol"`
	Compression bool          `json:"compression,omitempty"`
	Token       string        `json:"token,omitempty"`
	HMACSecret  string        `json:"hmac_secret,omitempty"`
	TokenTTL    time.Duration `json:"token_ttl"`
	First       int           `json:"first"`
	Count       int           `json:"count"`
	Subs        int           `json:"subs"`
	Channels    int           `json:"channels"`
	Channel     string        `json:"channel"`
	Pattern     bool          `json:"pattern,omitempty"`
	Publishers  int           `json:"publishers"`
	Concurrency int           `json:"concurrency"`
	// Reconnect makes a connection whose server went away connect to
	// the next URL and subscribe again (see Config).
	Reconnect bool `json:"reconnect,omitempty"`
	// Users, Hold and Unsubscribe are churn's (see Config).
	Users       int           `json:"users,omitempty"`
	Hold        time.Duration `json:"hold,omitempty"`
	Unsubscribe bool          `json:"unsubscribe,omitempty"`
	// Sources are the local addresses connection i dials from, in turn
	// (Sources[i%len]); none: the kernel's choice.
	Sources []netip.Addr `json:"sources,omitempty"`
	// Rate is this worker's share of connection attempts per second
	// (connect and churn; zero: as fast as Concurrency allows).
	Rate float64 `json:"rate,omitempty"`
	// OpenWithin stops opening connections after this long.
	OpenWithin time.Duration `json:"open_within"`
	// Lifetime is when a child gives up on its parent and exits.
	Lifetime time.Duration `json:"lifetime"`
}

// channelsFor names the channels connection i subscribes to.
func (s *workerSpec) channelsFor(i int) []string {
	switch s.Scenario {
	case ScenarioFanout:
		if s.Pattern {
			return []string{fanoutPattern(s.Channel)}
		}
		return []string{fanoutChannel(s.Channel)}
	case ScenarioChannels:
		return []string{ownChannel(s.Channel, i)}
	}
	out := make([]string, s.Subs)
	for j := range out {
		out[j] = s.Channel + "-idle-" + strconv.Itoa((i*s.Subs+j)%s.Channels)
	}
	return out
}

func fanoutChannel(prefix string) string { return prefix + "-fanout" }

// fanoutPattern is what fanout subscribers subscribe to with
// Config.Pattern; publishers then publish into patternChannel.
func fanoutPattern(prefix string) string { return fanoutChannel(prefix) + ".*" }

func patternChannel(prefix string) string { return fanoutChannel(prefix) + ".p" }

func ownChannel(prefix string, i int) string { return prefix + "-ch-" + strconv.Itoa(i) }

func churnChannel(prefix string, i int) string { return prefix + "-churn-" + strconv.Itoa(i) }

// userFor is the user of connection i.
func userFor(i int) string { return "bench-" + strconv.Itoa(i) }

// tokenFor is connection i's token: the given one, one signed for its
// user, or none. In churn, slot i's connections are user i%Users.
func (s *workerSpec) tokenFor(i int, now time.Time) (string, error) {
	if s.Token != "" || s.HMACSecret == "" {
		return s.Token, nil
	}
	if s.Scenario == ScenarioChurn && s.Users > 0 {
		i %= s.Users
	}
	claims := map[string]any{"sub": userFor(i), "exp": now.Add(s.TokenTTL).Unix()}
	return token.SignHMAC("HS256", []byte(s.HMACSecret), claims)
}
