package proxy

import (
	"context"
	"net/http"
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

// forwarded collects what a proxy sends along with a call: the configured
// client headers (from the connection's context, then from the headers a
// client sent in its connect command, which browsers use where they cannot
// set real ones) and gRPC metadata of gRPC clients. Keys are canonical
// header names.
func (p *Proxy) forwarded(ctx context.Context, emulated map[string]string) map[string]string {
	if len(p.headers) == 0 && len(p.metadata) == 0 {
		return nil
	}
	out := map[string]string{}
	kept, _ := ctx.Value(headersKey{}).(keptHeaders)
	for _, name := range p.headers {
		for i := 0; i+1 < len(kept); i += 2 {
			if kept[i] == name {
				out[name] = kept[i+1]
			}
		}
		if _, ok := out[name]; ok {
			continue
		}
		for k, v := range emulated {
			if strings.EqualFold(k, name) {
				out[name] = v
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
