package loadtest

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Payload kinds: what fills a publication's data after its stamp.
const (
	// PayloadPad pads with one repeated letter: the cheapest to make and
	// to check, and as compressible as data gets, so it says nothing
	// about compression.
	PayloadPad = "pad"
	// PayloadJSON is a live feed's document: an array of market events
	// (trades, quotes, orders) whose keys repeat and whose values vary,
	// as a real feed's do. It compresses about three to four times at
	// deflate level 1 from 1 KB up; much smaller documents compress
	// less, as real ones do.
	PayloadJSON = "json"
)

// payloadMaker makes a publisher's publication data.
type payloadMaker struct {
	kind string
	size int
	seed uint64
	pcg  rand.PCG
	rng  *rand.Rand
}

func newPayloadMaker(kind string, size int, seed uint64) *payloadMaker {
	m := &payloadMaker{kind: kind, size: size, seed: seed}
	m.rng = rand.New(&m.pcg)
	return m
}

// append appends the data of publisher's publication seq, sent at
// sentNano.
func (m *payloadMaker) append(dst []byte, publisher int, seq uint64, sentNano int64) []byte {
	if m.kind != PayloadJSON {
		return appendPayload(dst, publisher, seq, sentNano, m.size)
	}
	return m.appendJSON(dst, publisher, seq, sentNano)
}

// feedSymbol is an instrument of the feed and the price it moves around.
type feedSymbol struct {
	name  string
	price float64
}

// feedQuote is an instrument of one document: where it trades and its
// current price.
type feedQuote struct {
	name  string
	venue string
	price float64
}

var feedSymbols = []feedSymbol{
	{"BTC-USD", 61250}, {"ETH-USD", 3012}, {"SOL-USD", 148.2}, {"XRP-USD", 0.5231},
	{"ADA-USD", 0.3912}, {"DOGE-USD", 0.1234}, {"AVAX-USD", 27.45}, {"DOT-USD", 5.812},
	{"LINK-USD", 13.37}, {"MATIC-USD", 0.5512}, {"LTC-USD", 71.9}, {"BCH-USD", 388.1},
	{"ATOM-USD", 6.27}, {"UNI-USD", 7.48}, {"XLM-USD", 0.0951}, {"NEAR-USD", 4.95},
	{"AAPL", 227.52}, {"MSFT", 415.1}, {"NVDA", 118.95}, {"AMZN", 186.4},
	{"GOOGL", 163.2}, {"META", 523.7}, {"TSLA", 251.3}, {"EUR-USD", 1.0852},
}

var (
	feedVenues   = []string{"coinbase", "kraken", "binance", "bitstamp", "nasdaq", "nyse", "lse", "cboe"}
	feedStatuses = []string{"open", "partially_filled", "filled", "cancelled"}
	feedSides    = []string{"buy", "sell"}
	feedTIFs     = []string{"GTC", "GTC", "GTC", "IOC", "FOK", "DAY"}
	feedWords    = strings.Fields(`market session opened closed volume higher lower than
		expected after news from the central bank traders watch rates inflation
		earnings report guidance revised shares futures index rallied slipped
		steady demand supply outlook analysts quarter growth risk yields bonds
		dollar euro oil gold record week early late trading halted resumed`)
	base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// feedEpochMillis is when the feed's clock starts (2024-11-25): the
// events' times are made from it and the sequence number, not read from
// the clock, so that a seed always makes the same documents.
const feedEpochMillis = 1732492800000

// cursorLen is the length of the cursor, an opaque token as feeds page
// with.
const cursorLen = 12

// jsonClose is the least that ends a document: the events array, the
// cursor and an empty note.
const jsonClose = len(`],"cursor":"","note":""}`) + cursorLen

// appendJSON appends a document of m.size bytes (more only when the
// stamp alone leaves no room):
//
//	{"gb":[0,17,1732550400123456789],"events":[{"id":48213077,"type":"trade",...},...],"cursor":"k3J9x0"}
//
// Events are added while they fit; then a cursor (an opaque token, as
// feeds page with) and a note of words that takes what is left. The
// content comes from the seed, the publisher and the sequence number
// alone.
func (m *payloadMaker) appendJSON(dst []byte, publisher int, seq uint64, sentNano int64) []byte {
	m.pcg.Seed(m.seed, uint64(publisher)<<48^seq)
	start := len(dst)
	dst = appendPayloadHead(dst, publisher, seq, sentNano)
	dst = append(dst, `],"events":[`...)
	id := 40_000_000 + seq*1000 + uint64(m.rng.IntN(1000))
	ts := feedEpochMillis + int64(seq)*250
	// A channel of a feed carries one market or a few, whose prices move
	// a little from one event to the next.
	var market [3]feedQuote
	markets := 1 + m.rng.IntN(3)
	for i := range markets {
		sym := feedSymbols[m.rng.IntN(len(feedSymbols))]
		venue := feedVenues[m.rng.IntN(len(feedVenues))]
		market[i] = feedQuote{sym.name, venue, sym.price * (1 + (m.rng.Float64()-0.5)*0.02)}
	}
	for n := 0; ; n++ {
		mark := len(dst)
		if n > 0 {
			dst = append(dst, ',')
		}
		id += 1 + uint64(m.rng.IntN(40))
		ts += int64(m.rng.IntN(120))
		q := &market[m.rng.IntN(markets)]
		q.price *= 1 + (m.rng.Float64()-0.5)*0.0004
		dst = m.appendEvent(dst, id, ts, *q)
		if len(dst)-start+jsonClose > m.size {
			dst = dst[:mark]
			break
		}
	}
	dst = append(dst, `],"cursor":"`...)
	for range cursorLen {
		dst = append(dst, base62[m.rng.IntN(len(base62))])
	}
	dst = append(dst, `","note":"`...)
	note := len(dst)
	for n := 0; len(dst)-start+2 < m.size; n++ {
		if n > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, feedWords[m.rng.IntN(len(feedWords))]...)
	}
	if over := len(dst) - start + 2 - m.size; over > 0 {
		// The last word is cut: the note may not grow the document past
		// its size, and only the stamp may.
		dst = dst[:len(dst)-min(over, len(dst)-note)]
	}
	return append(dst, '"', '}')
}

// appendEvent appends one event: a trade, a quote or an order.
func (m *payloadMaker) appendEvent(dst []byte, id uint64, ts int64, sym feedQuote) []byte {
	r := m.rng
	price := sym.price
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendUint(dst, id, 10)
	switch k := r.IntN(10); {
	case k < 5:
		dst = append(dst, `,"type":"trade","symbol":"`...)
		dst = append(dst, sym.name...)
		dst = append(dst, `","price":`...)
		dst = appendPrice(dst, price)
		dst = append(dst, `,"qty":`...)
		dst = strconv.AppendFloat(dst, quantity(r), 'f', 4, 64)
		dst = append(dst, `,"side":"`...)
		dst = append(dst, feedSides[r.IntN(2)]...)
		dst = append(dst, `","venue":"`...)
		dst = append(dst, sym.venue...)
		dst = append(dst, '"')
	case k < 8:
		spread := price * 0.0002 * (1 + r.Float64())
		dst = append(dst, `,"type":"quote","symbol":"`...)
		dst = append(dst, sym.name...)
		dst = append(dst, `","bid":`...)
		dst = appendPrice(dst, price-spread/2)
		dst = append(dst, `,"ask":`...)
		dst = appendPrice(dst, price+spread/2)
		dst = append(dst, `,"bid_size":`...)
		dst = strconv.AppendFloat(dst, quantity(r), 'f', 4, 64)
		dst = append(dst, `,"ask_size":`...)
		dst = strconv.AppendFloat(dst, quantity(r), 'f', 4, 64)
	default:
		dst = append(dst, `,"type":"order","symbol":"`...)
		dst = append(dst, sym.name...)
		dst = append(dst, `","side":"`...)
		dst = append(dst, feedSides[r.IntN(2)]...)
		dst = append(dst, `","price":`...)
		dst = appendPrice(dst, price)
		dst = append(dst, `,"qty":`...)
		dst = strconv.AppendFloat(dst, quantity(r), 'f', 4, 64)
		dst = append(dst, `,"status":"`...)
		dst = append(dst, feedStatuses[r.IntN(len(feedStatuses))]...)
		dst = append(dst, `","tif":"`...)
		dst = append(dst, feedTIFs[r.IntN(len(feedTIFs))]...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"time":"`...)
	dst = time.UnixMilli(ts).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z")
	return append(dst, '"', '}')
}

// appendPrice writes a price with the decimals its size calls for.
func appendPrice(dst []byte, p float64) []byte {
	prec := 2
	if p < 10 {
		prec = 4
	}
	return strconv.AppendFloat(dst, p, 'f', prec, 64)
}

// feedLots are the round sizes that a good part of orders have.
var feedLots = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 100}

// quantity is a trade or order size: often a round lot, else mostly
// small and now and then large.
func quantity(r *rand.Rand) float64 {
	if r.IntN(5) < 2 {
		return feedLots[r.IntN(len(feedLots))]
	}
	return max(r.ExpFloat64()*2, 0.0001)
}
