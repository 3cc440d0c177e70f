package metrics

import (
	"fmt"
	"strconv"
)

// steps are the bucket bounds of the duration histograms: 1, 2.5 and 5
// times each power of ten from 10^fromExp up to 10 seconds. They are fine
// enough for the microseconds of a broadcast or an API call, and they
// include every bound of Centrifugo's histograms of the same durations, so
// that the Centrifugo-named histograms are these buckets with the extra
// bounds left out, exactly (a cumulative count at a bound does not depend
// on the bounds below it).
func steps(fromExp int) []float64 {
	var out []float64
	for e := fromExp; ; e++ {
		for _, m := range []string{"1", "2.5", "5"} {
			v := decimal(m, e)
			if v > 10 {
				return out
			}
			out = append(out, v)
		}
	}
}

// decimal is m×10^e as the float64 nearest the decimal, the same value a
// literal such as 0.00025 has, so that bounds compare equal to
// Centrifugo's.
func decimal(m string, e int) float64 {
	v, err := strconv.ParseFloat(fmt.Sprintf("%se%d", m, e), 64)
	if err != nil {
		panic(err)
	}
	return v
}

var (
	// broadcastBuckets: 1µs to 10s.
	broadcastBuckets = steps(-6)
	// commandBuckets, apiBuckets and proxyBuckets: 10µs to 10s.
	commandBuckets = steps(-5)
	apiBuckets     = commandBuckets
	proxyBuckets   = commandBuckets
	// recoveredBuckets are numbers of publications, Centrifugo's bounds.
	recoveredBuckets = []float64{0, 1, 2, 3, 5, 10, 20, 50, 100, 250, 500, 1000, 2000, 5000, 10000}
)

// Centrifugo's bounds of the histograms the Centrifugo-named series carry.
var (
	centrifugoCommandBuckets   = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	centrifugoBroadcastBuckets = []float64{0.000001, 0.000005, 0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	// centrifugoDefaultBuckets are Prometheus's default bounds, which
	// Centrifugo's API and proxy histograms use.
	centrifugoDefaultBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)
