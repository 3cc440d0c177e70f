package metrics

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// compatSeries is a series under another name (centrifugoSeries), read
// from the Gyre family from at each scrape.
type compatSeries struct {
	name, from, help string
	typ              dto.MetricType
	// sum, when set, adds up the Gyre series that map to one series, and
	// plus are more Gyre families added to from's (see summed).
	sum  bool
	plus []string
	// labels are the series' labels.
	labels []compatLabel
	// keepLabel and keep, when set, drop the Gyre series whose label
	// keepLabel has a value keep refuses.
	keepLabel string
	keep      func(string) bool
	// buckets are the bounds of a histogram, each one of the Gyre
	// histogram's.
	buckets []float64
}

// compatLabel is one label of a compatSeries: the value of the Gyre label
// from (values in rename replaced), or value when from is empty.
type compatLabel struct {
	name, from, value string
	rename            map[string]string
}

// where keeps only the Gyre series whose label has a value keep accepts.
func (s compatSeries) where(label string, keep func(string) bool) compatSeries {
	s.keepLabel, s.keep = label, keep
	return s
}

// summed adds the series of the families more to those of from. A
// counter or gauge series is the sum of the Gyre series that map to its
// labels: those of every family, and those that differ only in a label it
// drops.
func (s compatSeries) summed(more ...string) compatSeries {
	s.sum, s.plus = true, more
	return s
}

// Quantiles of the Centrifugo summaries, and the window they cover: a
// snapshot of the histogram's buckets is kept every summaryAge/summarySlots
// and the quantiles are those of what was observed since the oldest
// snapshot not older than summaryAge, as a Prometheus summary's.
var summaryQuantiles = []float64{0.5, 0.99, 0.999}

const (
	summaryAge   = 10 * time.Minute
	summarySlots = 5
)

// centrifugoView derives the Centrifugo-named series from gathered Gyre
// families, keeping the snapshots its summaries need.
type centrifugoView struct {
	now func() time.Time
	mu  sync.Mutex
	// windows holds the snapshots of each summary, by series and labels.
	windows map[string]*window
	// skip names a series left out, as Centrifugo leaves it out unless
	// configured to serve it.
	skip string
}

// recoveredPublicationsSeries is served only with
// Options.RecoveredPublicationsHistogram.
const recoveredPublicationsSeries = "centrifugo_client_recovered_publications"

func newCentrifugoView(now func() time.Time, recoveredHistogram bool) *centrifugoView {
	v := &centrifugoView{now: now, windows: map[string]*window{}}
	if !recoveredHistogram {
		v.skip = recoveredPublicationsSeries
	}
	return v
}

// derive returns the Centrifugo families read from own, the gathered Gyre
// families; a family with no series (a vector nothing was counted in yet)
// is left out, as the Prometheus client leaves it out.
func (v *centrifugoView) derive(own []*dto.MetricFamily) []*dto.MetricFamily {
	byName := make(map[string]*dto.MetricFamily, len(own))
	for _, f := range own {
		byName[f.GetName()] = f
	}
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []*dto.MetricFamily
	for i := range centrifugoSeries {
		s := &centrifugoSeries[i]
		src := byName[s.from]
		if src == nil || s.name == v.skip {
			continue
		}
		srcs := []*dto.MetricFamily{src}
		for _, name := range s.plus {
			if f := byName[name]; f != nil {
				srcs = append(srcs, f)
			}
		}
		if f := v.family(s, srcs, now); len(f.Metric) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// family is s read from srcs (from's family, then those of plus).
func (v *centrifugoView) family(s *compatSeries, srcs []*dto.MetricFamily, now time.Time) *dto.MetricFamily {
	f := &dto.MetricFamily{Name: ptr(s.name), Help: ptr(s.help), Type: s.typ.Enum()}
	// seen holds the counters and gauges written, by labels, where s sums.
	var seen map[string]*dto.Metric
	if s.sum {
		seen = map[string]*dto.Metric{}
	}
	for _, src := range srcs {
		for _, m := range src.Metric {
			in := labelValues(m)
			if s.keep != nil && !s.keep(in[s.keepLabel]) {
				continue
			}
			labels := s.labelPairs(in)
			var key string
			if seen != nil {
				key = labelKey(labels)
				if prev := seen[key]; prev != nil {
					addTo(prev, value(m))
					continue
				}
			}
			out := &dto.Metric{Label: labels}
			switch s.typ {
			case dto.MetricType_COUNTER:
				out.Counter = &dto.Counter{Value: ptr(value(m))}
			case dto.MetricType_GAUGE:
				out.Gauge = &dto.Gauge{Value: ptr(value(m))}
			case dto.MetricType_HISTOGRAM:
				out.Histogram = rebucket(m.GetHistogram(), s.buckets)
			case dto.MetricType_SUMMARY:
				out.Summary = v.summarize(s.name+"\xff"+labelKey(labels), m.GetHistogram(), now)
			}
			f.Metric = append(f.Metric, out)
			if seen != nil {
				seen[key] = out
			}
		}
	}
	return f
}

// addTo adds v to a counter or a gauge.
func addTo(m *dto.Metric, v float64) {
	if m.Counter != nil {
		m.Counter.Value = ptr(m.Counter.GetValue() + v)
		return
	}
	m.Gauge.Value = ptr(m.Gauge.GetValue() + v)
}

// labelPairs are the labels of s for a Gyre series labelled in.
func (s *compatSeries) labelPairs(in map[string]string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, len(s.labels))
	for i, l := range s.labels {
		val := l.value
		if l.from != "" {
			val = in[l.from]
			if r, ok := l.rename[val]; ok {
				val = r
			}
		}
		out[i] = &dto.LabelPair{Name: ptr(l.name), Value: ptr(val)}
	}
	// In name order, as the Prometheus client writes them.
	slices.SortFunc(out, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

func labelValues(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.Label))
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func labelKey(labels []*dto.LabelPair) string {
	var b strings.Builder
	for _, l := range labels {
		b.WriteString(l.GetName())
		b.WriteByte('=')
		b.WriteString(l.GetValue())
		b.WriteByte(0)
	}
	return b.String()
}

// value is the value of a counter or a gauge.
func value(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// rebucket is h with the buckets at bounds only. Every bound is one of
// h's: the cumulative count there is exact.
func rebucket(h *dto.Histogram, bounds []float64) *dto.Histogram {
	out := &dto.Histogram{SampleCount: h.SampleCount, SampleSum: h.SampleSum}
	for _, b := range bounds {
		for _, hb := range h.Bucket {
			if sameBound(hb.GetUpperBound(), b) {
				out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: ptr(b), CumulativeCount: hb.CumulativeCount})
				break
			}
		}
	}
	return out
}

func sameBound(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// summarize is the summary of histogram h (series key): its count and sum,
// and quantiles of what it observed over the summary's window.
func (v *centrifugoView) summarize(key string, h *dto.Histogram, now time.Time) *dto.Summary {
	w := v.windows[key]
	if w == nil {
		w = &window{}
		v.windows[key] = w
	}
	counts := make([]uint64, len(h.Bucket))
	bounds := make([]float64, len(h.Bucket))
	for i, b := range h.Bucket {
		counts[i], bounds[i] = b.GetCumulativeCount(), b.GetUpperBound()
	}
	delta, total := w.observe(now, snapshot{at: now, counts: counts, total: h.GetSampleCount()})
	out := &dto.Summary{SampleCount: h.SampleCount, SampleSum: h.SampleSum}
	for _, q := range summaryQuantiles {
		out.Quantile = append(out.Quantile, &dto.Quantile{Quantile: ptr(q), Value: ptr(quantile(q, bounds, delta, total))})
	}
	return out
}

// window holds snapshots of a histogram's cumulative bucket counts, the
// oldest first.
type window struct{ snaps []snapshot }

type snapshot struct {
	at     time.Time
	counts []uint64
	total  uint64
}

// observe takes the histogram's state cur and returns what it observed
// over the window: the bucket counts (cumulative) and the total. A
// histogram seen for the first time counts from zero, what it observed
// since the start.
func (w *window) observe(now time.Time, cur snapshot) (delta []uint64, total uint64) {
	if len(w.snaps) == 0 {
		w.snaps = append(w.snaps, snapshot{at: now, counts: make([]uint64, len(cur.counts))})
	}
	// The base is the newest snapshot at or past the window's age, so
	// that the window spans it whole; older ones go.
	for len(w.snaps) > 1 && !w.snaps[1].at.After(now.Add(-summaryAge)) {
		w.snaps = w.snaps[1:]
	}
	base := w.snaps[0]
	delta = make([]uint64, len(cur.counts))
	for i := range cur.counts {
		delta[i] = cur.counts[i] - base.counts[i]
	}
	if now.Sub(w.snaps[len(w.snaps)-1].at) >= summaryAge/summarySlots {
		w.snaps = append(w.snaps, cur)
	}
	return delta, cur.total - base.total
}

// quantile estimates the q-quantile of total observations whose
// cumulative counts at bounds are counts, interpolating linearly within
// the bucket it falls in, as PromQL's histogram_quantile does: NaN for no
// observations, the highest bound for one past it.
func quantile(q float64, bounds []float64, counts []uint64, total uint64) float64 {
	if total == 0 {
		return math.NaN()
	}
	rank := q * float64(total)
	var below float64
	for i, c := range counts {
		if float64(c) >= rank {
			lower := 0.0
			if i > 0 {
				lower = bounds[i-1]
			}
			in := float64(c) - below
			if in == 0 {
				return bounds[i]
			}
			return lower + (bounds[i]-lower)*(rank-below)/in
		}
		below = float64(c)
	}
	return bounds[len(bounds)-1]
}

func ptr[T any](v T) *T { return &v }
