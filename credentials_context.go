package gyre

import "context"

type credentialsKey struct{}

// WithCredentials returns a copy of ctx carrying creds. A connection served
// with that context (the request context of its transport handler) is
// authenticated as creds when its connect command has no token: an HTTP
// middleware that trusts a proxy in front, for one, sets the user from a
// request header this way. A connecting handler still sees them in
// ConnectingEvent.Credentials and may replace them.
func WithCredentials(ctx context.Context, creds *Credentials) context.Context {
	return context.WithValue(ctx, credentialsKey{}, creds)
}

// credentialsFrom returns the credentials WithCredentials put in ctx.
func credentialsFrom(ctx context.Context) *Credentials {
	c, _ := ctx.Value(credentialsKey{}).(*Credentials)
	return c
}
