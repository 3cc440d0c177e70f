package server

import (
	"crypto/rand"
	"embed"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/gyrehq/gyre/server/config"
)

//go:embed demo/index.html
var demoFS embed.FS

// DevDefaults makes cfg ready to try Gyre without writing a config: fresh
// random token and API secrets, channels without namespace open to
// connected clients with history, presence and join/leave, the health
// endpoint and the demo page on. It is what `gyre` does when started
// without a config file. It returns the secrets it generated.
func DevDefaults(cfg *config.Config) (hmacSecret, apiKey string) {
	if cfg.Client.Token.HMACSecretKey == "" {
		cfg.Client.Token.HMACSecretKey = randomHex(32)
	}
	if cfg.HTTPAPI.Key == "" {
		cfg.HTTPAPI.Key = randomHex(16)
	}
	o := &cfg.Channel.WithoutNamespace
	o.AllowSubscribeForClient = true
	o.AllowPublishForClient = true
	o.AllowPresenceForSubscriber = true
	o.AllowHistoryForSubscriber = true
	o.Presence = true
	o.JoinLeave = true
	o.HistorySize = 100
	o.HistoryTTL = 5 * time.Minute
	o.AllowRecovery = true
	cfg.Health.Enabled = true
	return cfg.Client.Token.HMACSecretKey, cfg.HTTPAPI.Key
}

// EnableDemo serves the demo page at the root of the server.
func (s *Server) EnableDemo() {
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, demoFS, "demo/index.html")
	})
	s.note(s.mux, "demo /")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
