package config

import "crypto/rand"

// Generate returns the defaults with fresh random secrets: the token HMAC
// secret, the HTTP API key, and the admin password and secret. Every call
// gives new ones, drawn from crypto/rand.
func Generate() *Config {
	c := Default()
	c.Client.Token.HMACSecretKey = rand.Text()
	c.HTTPAPI.Key = rand.Text()
	c.Admin.Password = rand.Text()
	c.Admin.Secret = rand.Text()
	return c
}
