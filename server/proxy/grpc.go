package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// serviceName is the gRPC service of proxy.proto.
const serviceName = "/centrifugal.centrifugo.proxy.CentrifugoProxy/"

// grpcCaller calls the proxy service on one connection.
type grpcCaller struct {
	conn *grpc.ClientConn
	opts []grpc.CallOption
}

func (g *grpcCaller) call(ctx context.Context, method string, req, resp proto.Message, hdr map[string]string) error {
	if len(hdr) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, outgoing(hdr))
	}
	return g.conn.Invoke(ctx, serviceName+method, req, resp, g.opts...)
}

// outgoing is the gRPC metadata that carries forwarded headers.
func outgoing(hdr map[string]string) metadata.MD {
	md := make(metadata.MD, len(hdr))
	for k, v := range hdr {
		md.Set(strings.ToLower(k), v)
	}
	return md
}

// Pool shares gRPC connections between proxies: proxies with the same
// endpoint, TLS and credentials use one connection. Its zero value is
// ready; Close closes every connection.
type Pool struct {
	mu    sync.Mutex
	conns map[poolKey]*grpc.ClientConn
}

type poolKey struct {
	target, credKey, credValue string
	tls                        *tls.Config
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{} }

func (p *Pool) conn(cfg Config) (*grpc.ClientConn, error) {
	target, ok := strings.CutPrefix(cfg.Endpoint, "grpc://")
	if !ok || target == "" {
		return nil, fmt.Errorf("proxy: endpoint %q: want grpc://host:port", cfg.Endpoint)
	}
	key := poolKey{target: target, credKey: cfg.GRPCCredentialsKey, credValue: cfg.GRPCCredentialsValue, tls: cfg.TLS}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.conns[key]; c != nil {
		return c, nil
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if cfg.GRPCCredentialsKey != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(keyValueCredentials{key: cfg.GRPCCredentialsKey, value: cfg.GRPCCredentialsValue}))
	}
	c, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("proxy: endpoint %q: %w", cfg.Endpoint, err)
	}
	if p.conns == nil {
		p.conns = map[poolKey]*grpc.ClientConn{}
	}
	p.conns[key] = c
	return c, nil
}

// Close closes every connection of the pool.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.conns {
		_ = c.Close()
		delete(p.conns, k)
	}
	return nil
}

func newGRPCCaller(cfg Config, pool *Pool) (*grpcCaller, error) {
	conn, err := pool.conn(cfg)
	if err != nil {
		return nil, err
	}
	g := &grpcCaller{conn: conn}
	if cfg.GRPCCompression {
		g.opts = append(g.opts, grpc.UseCompressor(gzip.Name))
	}
	return g, nil
}

// keyValueCredentials sends one metadata pair with every call
// (grpc.credentials_key and credentials_value).
type keyValueCredentials struct{ key, value string }

func (k keyValueCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{k.key: k.value}, nil
}

// RequireTransportSecurity is false: Centrifugo sends the pair over plain
// connections too, and backends on a private network rely on it.
func (keyValueCredentials) RequireTransportSecurity() bool { return false }
