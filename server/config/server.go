package config

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// HTTPServer configures the listening sockets.
type HTTPServer struct {
	Address         string `key:"address" help:"Interface address to listen on; empty listens on all."`
	Port            int    `key:"port" default:"8000" max:"65535" help:"Port of the external HTTP server; 0 picks a free port."`
	InternalAddress string `key:"internal_address" help:"Interface address for internal endpoints (API, admin, metrics, health, debug); empty uses address."`
	InternalPort    int    `key:"internal_port" max:"65535" help:"Port for internal endpoints; 0 serves them on port."`
	TLS             TLS    `key:"tls" help:"TLS of the HTTP server."`
	TLSExternal     bool   `key:"tls_external" help:"Use TLS only on the external port, leaving the internal port plain."`
	InternalTLS     TLS    `key:"internal_tls" help:"TLS of the internal port when it differs from tls."`
	// Centrifugo v6 has no keys for these; its server closes idle and
	// slow connections after about 30 s, which the defaults follow.
	ReadHeaderTimeout time.Duration `key:"read_header_timeout" default:"10s" min:"1ns" help:"How long a new connection may take to send the headers of its first request, its TLS handshake included, and a kept-alive connection those of its next one; past it the connection is closed. On the gRPC ports it bounds a new connection's HTTP/2 handshake."`
	ReadTimeout       time.Duration `key:"read_timeout" default:"30s" min:"1ns" help:"How long reading a whole request, its body included, may take; past it the connection is closed. Streaming transports (HTTP-stream, SSE, uni_http_stream, uni_sse) lift it once their request is read, and a WebSocket once upgraded."`
	WriteTimeout      time.Duration `key:"write_timeout" default:"60s" min:"1ns" help:"How long handling a request and writing its response may take, counted from the end of its headers; past it the connection is closed. Streaming transports and the admin live tail bound each write on their own instead. Go's pprof refuses profiles as long as it."`
	IdleTimeout       time.Duration `key:"idle_timeout" default:"30s" min:"1ns" help:"How long a kept-alive connection may wait for its next request before it is closed; on the gRPC ports, how long a connection without a call or stream may stay before it is sent GOAWAY and closed."`
	TLSAutocert       Unimplemented `key:"tls_autocert" help:"Automatic certificates from an ACME provider." unsupported:"Obtain certificates outside Gyre (certbot, a TLS-terminating proxy) and give them with http_server.tls."`
	HTTP3             Unimplemented `key:"http3" help:"HTTP/3 support." unsupported:"Gyre serves HTTP/1.1 and HTTP/2; put an HTTP/3-capable proxy in front if clients need it."`
}

// TLS configures a TLS endpoint or client. Certificates and keys may be given
// inline as PEM, as base64 of PEM, or as a file path; the file wins over
// base64, which wins over inline PEM.
type TLS struct {
	Enabled            bool   `key:"enabled" help:"Turn TLS on."`
	CertPEM            string `key:"cert_pem" help:"Certificate, PEM."`
	CertPEMB64         string `key:"cert_pem_b64" help:"Certificate, base64-encoded PEM."`
	CertPEMFile        string `key:"cert_pem_file" help:"Certificate, path to a PEM file."`
	KeyPEM             string `key:"key_pem" help:"Private key, PEM."`
	KeyPEMB64          string `key:"key_pem_b64" help:"Private key, base64-encoded PEM."`
	KeyPEMFile         string `key:"key_pem_file" help:"Private key, path to a PEM file."`
	ServerCAPEM        string `key:"server_ca_pem" help:"CA used by a client to verify the server, PEM."`
	ServerCAPEMB64     string `key:"server_ca_pem_b64" help:"CA used by a client to verify the server, base64-encoded PEM."`
	ServerCAPEMFile    string `key:"server_ca_pem_file" help:"CA used by a client to verify the server, path to a PEM file."`
	ClientCAPEM        string `key:"client_ca_pem" help:"CA used by a server to require and verify client certificates, PEM."`
	ClientCAPEMB64     string `key:"client_ca_pem_b64" help:"CA used by a server to require and verify client certificates, base64-encoded PEM."`
	ClientCAPEMFile    string `key:"client_ca_pem_file" help:"CA used by a server to require and verify client certificates, path to a PEM file."`
	InsecureSkipVerify bool   `key:"insecure_skip_verify" help:"As a client, accept any server certificate (testing only)."`
	ServerName         string `key:"server_name" help:"As a client, the host name to verify the server certificate against."`
}

// HTTPAPI configures the server HTTP API.
type HTTPAPI struct {
	Disabled           bool   `key:"disabled" help:"Turn the HTTP API off."`
	HandlerPrefix      string `key:"handler_prefix" default:"/api" help:"URL path the API is served under."`
	Key                string `key:"key" help:"API key expected in X-API-Key, Authorization: apikey <key>, or ?api_key=."`
	ErrorMode          string `key:"error_mode" enum:",transport" help:"transport maps API errors to HTTP status codes; empty always answers 200 with an error object."`
	External           bool   `key:"external" help:"Serve the API on the external port even when an internal port is set."`
	Insecure           bool   `key:"insecure" help:"Accept API requests without a key (only behind a trusted network)."`
	MaxRequestBodySize int    `key:"max_request_body_size" default:"16777216" min:"1" help:"Largest API request body in bytes; a larger one is refused with HTTP 413."`
}

// Admin configures the admin web interface.
type Admin struct {
	Enabled         bool     `key:"enabled" help:"Serve the admin web interface (the app at handler_prefix/, its JSON routes under handler_prefix/admin/; see docs/admin.md). On the internal port when http_server.internal_port is set, unless external."`
	HandlerPrefix   string   `key:"handler_prefix" help:"URL path the admin interface is served under, such as /admin-ui; empty serves it at the root."`
	Password        string   `key:"password" help:"Password to log into the admin interface, compared in constant time. After 10 failed logins within a minute from one address, that address's further attempts are answered one at a time, 6 seconds apart; the right password still logs in. Required unless insecure."`
	Secret          string   `key:"secret" help:"Secret that signs admin session tokens (HMAC-SHA256, valid 24 hours); changing it logs everybody out. Required unless insecure."`
	Insecure        bool     `key:"insecure" help:"No login for the admin interface: every admin route, the API included, is open (only behind a trusted network)."`
	WebPath         string   `key:"web_path" help:"Directory with another build of the admin web application (with an index.html) to serve instead of the embedded one."`
	WebProxyAddress string   `key:"web_proxy_address" help:"http(s) URL of a running development server of the admin web application to proxy the app to; the admin routes stay the server's."`
	External        bool     `key:"external" help:"Serve the admin interface on the external port even when an internal port is set."`
	TrustedProxies  []string `key:"trusted_proxies" help:"Addresses (CIDRs such as 10.0.0.0/8, or single IPs) of the reverse proxies in front of the admin interface. A request whose socket peer is one of them is counted by the login limit against the client address the proxy reports (X-Forwarded-For, else X-Real-IP, else Forwarded); any other request against its socket address, whatever headers it sends. Empty trusts no proxy."`
}

// TrustedProxyPrefixes parses TrustedProxies; a single IP is a prefix of
// its full length.
func (a *Admin) TrustedProxyPrefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(a.TrustedProxies))
	for _, s := range a.TrustedProxies {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", s)
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

// Prometheus configures the metrics endpoint.
type Prometheus struct {
	Enabled                        bool          `key:"enabled" help:"Serve Prometheus metrics."`
	HandlerPrefix                  string        `key:"handler_prefix" default:"/metrics" help:"URL path of the metrics endpoint."`
	InstrumentHTTPHandlers         bool          `key:"instrument_http_handlers" help:"Count and time the requests of each HTTP handler (client transports, API, health): gyre_http_requests_total and gyre_http_request_duration_seconds, labelled by handler."`
	RecoveredPublicationsHistogram bool          `key:"recovered_publications_histogram" help:"Also serve centrifugo_client_recovered_publications, the histogram of publications given per recovery, as Centrifugo does with this key (with centrifugo_names); gyre_client_recovered_publications is served either way."`
	NativeHistograms               Unimplemented `key:"native_histograms" help:"Prometheus native (sparse) histograms." unsupported:"Gyre serves classic histograms, with bucket bounds that include Centrifugo's (docs/metrics.md); remove the key, and use histogram_quantile over the _bucket series."`
	CentrifugoNames                bool          `key:"centrifugo_names" default:"true" help:"Also serve the series Centrifugo v6 dashboards and alerts read (centrifugo_node_num_clients, centrifugo_client_num_reply_errors, ...), under Centrifugo's names and labels, from the same measurements as the gyre_* series (docs/metrics.md). A Gyre key: false serves the gyre_* series only."`
}

// Health configures the health check endpoint.
type Health struct {
	Enabled       bool   `key:"enabled" help:"Serve the health check endpoint, which reflects the broker's state."`
	HandlerPrefix string `key:"handler_prefix" default:"/health" help:"URL path of the health check endpoint."`
}

// Debug configures the profiling endpoints.
type Debug struct {
	Enabled       bool   `key:"enabled" help:"Serve Go pprof endpoints."`
	HandlerPrefix string `key:"handler_prefix" default:"/debug/pprof" help:"URL path of the pprof endpoints."`
}
