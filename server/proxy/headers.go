package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc/metadata"
)

// The headers of a client's request are gone once its connection is
// upgraded; the ones a proxy forwards are kept in the connection's context
// by KeepHeaders, and only those, so that an idle connection holds no more
// than what its proxies send.

type headersKey struct{}

// keptHeaders are name/value pairs, names in canonical form.
type keptHeaders []string

// KeepHeaders returns a handler that stores the named request headers in
// the request's context before calling next; the node's transports keep
// that context as the connection's.
func KeepHeaders(names []string, next http.Handler) http.Handler {
	canon := make([]string, 0, len(names))
	for _, n := range names {
		canon = append(canon, http.CanonicalHeaderKey(n))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var kept keptHeaders
		for _, n := range canon {
			if v := r.Header.Get(n); v != "" {
				kept = append(kept, n, v)
			}
		}
		if kept != nil {
			r = r.WithContext(context.WithValue(r.Context(), headersKey{}, kept))
		}
		next.ServeHTTP(w, r)
	})
}

type emulatedKey struct{}

// KeepEmulated returns ctx holding the headers a client sent in its
// connect command (headers emulation: centrifuge-js's headers option, for
// browsers that cannot set real ones) that names allows, names in lower
// case, for the proxies called later on the connection; ctx itself when
// there are none.
func KeepEmulated(ctx context.Context, headers map[string]string, names []string) context.Context {
	var kept map[string]string
	for k, v := range headers {
		if slices.Contains(names, strings.ToLower(k)) {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[http.CanonicalHeaderKey(k)] = v
		}
	}
	if kept == nil {
		return ctx
	}
	return context.WithValue(ctx, emulatedKey{}, kept)
}

// forwarded collects what a proxy sends along with a call: the headers a
// client sent in its connect command that emulated_headers names (those
// of this connect, or kept by KeepEmulated), then the client request
// headers http_headers names, which win over emulated ones of the same
// name, and the gRPC metadata of gRPC clients. Keys are canonical header
// names.
//
// Emulated headers are the client's to choose, so a name in http_headers
// alone never forwards one: a backend that trusts a header because a
// reverse proxy in front sets it would otherwise take a client's word for
// it whenever the proxy did not set it.
func (p *Proxy) forwarded(ctx context.Context, emulated map[string]string) map[string]string {
	if len(p.headers) == 0 && len(p.metadata) == 0 && len(p.emulated) == 0 {
		return nil
	}
	out := map[string]string{}
	if emulated == nil {
		emulated, _ = ctx.Value(emulatedKey{}).(map[string]string)
	}
	var refused []string
	for k, v := range emulated {
		name := http.CanonicalHeaderKey(k)
		switch {
		case slices.Contains(p.emulated, strings.ToLower(k)):
			out[name] = v
		case slices.Contains(p.headers, name):
			refused = append(refused, name)
		}
	}
	if refused != nil {
		slices.Sort(refused)
		p.fails.Add("emulated headers", slog.LevelInfo,
			"proxy: headers the client sent in its connect command are named in http_headers but not in emulated_headers: not forwarded (their values are the client's own)",
			"proxy", p.name, "headers", refused)
	}
	kept, _ := ctx.Value(headersKey{}).(keptHeaders)
	for _, name := range p.headers {
		for i := 0; i+1 < len(kept); i += 2 {
			if kept[i] == name {
				out[name] = kept[i+1]
			}
		}
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for _, key := range p.metadata {
			if v := md.Get(key); len(v) > 0 {
				out[http.CanonicalHeaderKey(key)] = v[0]
			}
		}
	}
	return out
}
