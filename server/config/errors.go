package config

import "errors"

var (
	// ErrUnknownKey reports a key path that names no configuration key.
	ErrUnknownKey = errors.New("unknown key")
	// ErrNotImplemented reports a Centrifugo key that Gyre recognises but
	// does not implement.
	ErrNotImplemented = errors.New("known Centrifugo key that Gyre does not implement")
)

// KeyError is a problem with the value of one key. Its message names the key
// path, as in `config: client.ping_interval: invalid duration "5x"`.
type KeyError struct {
	Path string // e.g. "channel.namespaces[2].history_ttl"
	Err  error
}

var _ error = (*KeyError)(nil)

func (e *KeyError) Error() string { return "config: " + e.Path + ": " + e.Err.Error() }

func (e *KeyError) Unwrap() error { return e.Err }

func keyErr(path string, err error) *KeyError { return &KeyError{Path: path, Err: err} }
