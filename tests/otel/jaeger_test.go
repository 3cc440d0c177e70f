package otel_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// traceLimit bounds every wait for what a node exports: a hang guard, not
// a timing assertion. The span processors of the nodes export every few
// hundred milliseconds (OTEL_BSP_SCHEDULE_DELAY); a loaded machine, a
// race-enabled binary and retries after a failed export take longer.
const traceLimit = 90 * time.Second

// quickHTTP asks Jaeger, whose answers are quick when it is up.
var quickHTTP = &http.Client{Timeout: 5 * time.Second}

// span is one span as Jaeger's query API gives it, flattened.
type span struct {
	TraceID  string // 32 hex digits, lower case
	SpanID   string // 16 hex digits, lower case
	ParentID string // the CHILD_OF reference; "" for a root
	Name     string
	Kind     string // "server", "client", "consumer", ... ("" for internal)
	Service  string
	Attrs    map[string]string // attributes, values as text
	Resource map[string]string // resource attributes but service.name
}

func (s span) String() string {
	keys := make([]string, 0, len(s.Attrs))
	for k := range s.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q kind=%s service=%s span=%s parent=%s instance=%s", s.TraceID, s.Name, s.Kind, s.Service, s.SpanID, s.ParentID, s.Resource["service.instance.id"])
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, s.Attrs[k])
	}
	return b.String()
}

// The JSON of Jaeger's query API (/api/traces), as much as the tests read.
type (
	jaegerReply struct {
		Data []jaegerTrace `json:"data"`
	}
	jaegerTrace struct {
		TraceID   string                   `json:"traceID"`
		Spans     []jaegerSpan             `json:"spans"`
		Processes map[string]jaegerProcess `json:"processes"`
	}
	jaegerSpan struct {
		TraceID       string `json:"traceID"`
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		Tags      []jaegerTag `json:"tags"`
		ProcessID string      `json:"processID"`
	}
	jaegerTag struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
	jaegerProcess struct {
		ServiceName string      `json:"serviceName"`
		Tags        []jaegerTag `json:"tags"`
	}
)

// hexID is a trace or span id in hex of the given width: Jaeger leaves
// out leading zeros.
func hexID(s string, width int) string {
	s = strings.ToLower(s)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

func tagMap(tags []jaegerTag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		switch v := t.Value.(type) {
		case string:
			m[t.Key] = v
		case json.Number:
			m[t.Key] = v.String()
		default:
			m[t.Key] = fmt.Sprint(v)
		}
	}
	return m
}

func (t jaegerTrace) flatten() []span {
	var out []span
	for _, js := range t.Spans {
		s := span{
			TraceID: hexID(js.TraceID, 32),
			SpanID:  hexID(js.SpanID, 16),
			Name:    js.OperationName,
			Attrs:   tagMap(js.Tags),
		}
		for _, r := range js.References {
			if r.RefType == "CHILD_OF" {
				s.ParentID = hexID(r.SpanID, 16)
			}
		}
		s.Kind = s.Attrs["span.kind"]
		delete(s.Attrs, "span.kind")
		if p, ok := t.Processes[js.ProcessID]; ok {
			s.Service = p.ServiceName
			s.Resource = tagMap(p.Tags)
		}
		out = append(out, s)
	}
	return out
}

// queryJaeger gets path of the query API; a 404 is no traces, not an
// error.
func queryJaeger(path string) ([]jaegerTrace, error) {
	resp, err := quickHTTP.Get("http://" + jaeger.query + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	var r jaegerReply
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return r.Data, nil
}

// traceSpans are the spans of the trace Jaeger has stored so far.
func traceSpans(traceID string) ([]span, error) {
	traces, err := queryJaeger("/api/traces/" + traceID)
	var out []span
	for _, t := range traces {
		out = append(out, t.flatten()...)
	}
	return out, err
}

// serviceSpans are the spans of every trace of service of the last hour.
func serviceSpans(service string) ([]span, error) {
	now := time.Now()
	q := url.Values{
		"service": {service},
		"limit":   {"1000"},
		"start":   {strconv.FormatInt(now.Add(-time.Hour).UnixMicro(), 10)},
		"end":     {strconv.FormatInt(now.Add(time.Hour).UnixMicro(), 10)},
	}
	traces, err := queryJaeger("/api/traces?" + q.Encode())
	var out []span
	for _, t := range traces {
		out = append(out, t.flatten()...)
	}
	return out, err
}

// waitSpans polls get until check finds what it wants in the spans,
// returning ""; check otherwise says what is missing. The test fails
// after traceLimit with that and the spans seen.
func waitSpans(t testing.TB, what string, get func() ([]span, error), check func([]span) string) []span {
	t.Helper()
	deadline := time.Now().Add(traceLimit)
	for {
		spans, err := get()
		missing := ""
		if err != nil {
			missing = err.Error()
		} else if missing = check(spans); missing == "" {
			return spans
		}
		if time.Now().After(deadline) {
			var dump strings.Builder
			for _, s := range spans {
				dump.WriteString("\n  " + s.String())
			}
			t.Fatalf("gave up after %v waiting for %s: %s; spans in Jaeger:%s", traceLimit, what, missing, dump.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitTrace polls Jaeger for the trace until check is content.
func waitTrace(t testing.TB, traceID, what string, check func([]span) string) []span {
	t.Helper()
	return waitSpans(t, what+" in trace "+traceID, func() ([]span, error) { return traceSpans(traceID) }, check)
}

// newID is a random id of n bytes in hex, its first byte not zero (Jaeger
// prints ids without leading zeros, and an all-zero id is invalid).
func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	b[0] |= 0x10
	return hex.EncodeToString(b)
}

// traceparent is a W3C traceparent of a sampled span.
func traceparent(traceID, spanID string) string {
	return "00-" + traceID + "-" + spanID + "-01"
}

// parseTraceparent splits a version 00 traceparent into its trace id and
// (parent) span id.
func parseTraceparent(tp string) (traceID, spanID string, ok bool) {
	f := strings.Split(tp, "-")
	if len(f) != 4 || f[0] != "00" || len(f[1]) != 32 || len(f[2]) != 16 || len(f[3]) != 2 {
		return "", "", false
	}
	return f[1], f[2], true
}

// serviceName is a service name no other test uses, for the nodes of t.
func serviceName(t testing.TB) string {
	name := strings.NewReplacer("/", "-", " ", "-", "=", "-").Replace(t.Name())
	return "gyre-test-" + name + "-" + newID(3)
}

// sample is one line of a Prometheus text exposition.
type sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// scrape reads the Prometheus text exposition at url.
func scrape(url string) ([]sample, error) {
	resp, err := quickHTTP.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, body)
	}
	return parseExposition(string(body)), nil
}

// parseExposition reads the samples of the text format: name, labels
// and value of every line that is not a comment.
func parseExposition(text string) []sample {
	var out []sample
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{Labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i > 0 {
			s.Name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			rest = parseLabels(rest[1:], s.Labels)
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.Value = v
		out = append(out, s)
	}
	return out
}

// parseLabels reads name="value" pairs up to the closing brace into m
// and returns what follows it.
func parseLabels(s string, m map[string]string) string {
	for {
		s = strings.TrimLeft(s, ", ")
		if s == "" || s[0] == '}' {
			return strings.TrimPrefix(s, "}")
		}
		eq := strings.Index(s, `="`)
		if eq < 0 {
			return ""
		}
		name := s[:eq]
		s = s[eq+2:]
		var v strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[i])
				}
				continue
			}
			if c == '"' {
				s = s[i+1:]
				break
			}
			v.WriteByte(c)
		}
		m[name] = v.String()
	}
}

// sum adds the values of the samples named name (any labels) that match.
func sum(samples []sample, name string, match func(map[string]string) bool) (float64, bool) {
	var total float64
	found := false
	for _, s := range samples {
		if s.Name == name && (match == nil || match(s.Labels)) {
			total += s.Value
			found = true
		}
	}
	return total, found
}
