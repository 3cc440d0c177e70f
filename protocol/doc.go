// Package protocol holds the client protocol of Gyre.
package protocol
