package redis

import "github.com/redis/rueidis"

// ClientOptions returns the rueidis options of the clients that reach the
// Redis c describes, for code that keeps data of its own there beside the
// engine (the server's redis_stream consumer): one option per entry of
// Addresses, in order, or a single one for a Redis Cluster or a
// Sentinel-watched master. They carry c's authentication, database, TLS,
// connect and I/O timeouts, as the engine's clients do; InitAddress[0] of
// a standalone option is its address without credentials. Prefix and the
// history, presence and pub/sub fields of c play no part.
//
// Making a client (rueidis.NewClient) connects at once, so the caller
// chooses when, and may retry while Redis is down.
func (c Config) ClientOptions() ([]rueidis.ClientOption, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	return c.clientOptions()
}
