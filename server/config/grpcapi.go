package config

// GRPCAPI configures the server API over gRPC (service
// centrifugal.centrifugo.api.CentrifugoApi), on a port of its own.
type GRPCAPI struct {
	Enabled               bool   `key:"enabled" help:"Serve the server API over gRPC."`
	Address               string `key:"address" help:"Interface address of the gRPC API server; empty listens on all."`
	Port                  int    `key:"port" default:"10000" max:"65535" help:"Port of the gRPC API server; 0 picks a free port."`
	Key                   string `key:"key" help:"API key every call must carry in the metadata authorization: apikey <key>; empty accepts calls without a key (as Centrifugo does), which start-up warns about."`
	ErrorMode             string `key:"error_mode" enum:",transport" help:"transport answers a method's error with a gRPC status (the API error in its details) instead of in the response's error field."`
	TLS                   TLS    `key:"tls" help:"TLS of the gRPC API server."`
	Reflection            bool   `key:"reflection" help:"Register the gRPC server reflection service (for grpcurl and similar tools); it answers without the key."`
	MaxReceiveMessageSize int    `key:"max_receive_message_size" help:"Largest incoming gRPC message in bytes; 0 uses the gRPC default (4 MiB)."`
}
