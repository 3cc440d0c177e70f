package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gyrehq/gyre/token"
)

type tokenRequest struct {
	Kind       string          `json:"kind"`
	User       string          `json:"user"`
	Channel    string          `json:"channel"`
	TTLSeconds int64           `json:"ttl_seconds"`
	Info       json.RawMessage `json:"info"`
}

// maxTokenTTL caps the lifetime of a token made for testing.
const maxTokenTTL = 30 * 24 * time.Hour

// token signs a connection or subscription token with the server's HMAC
// key (HS256), for testing clients; the key itself never leaves.
func (h *Handler) token(w http.ResponseWriter, r *http.Request) {
	var req tokenRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		h.badRequest(w, r, "unreadable JSON body: "+err.Error())
		return
	}
	if req.TTLSeconds == 0 {
		req.TTLSeconds = 3600
	}
	ttl := time.Duration(req.TTLSeconds) * time.Second
	if req.TTLSeconds < 0 || ttl > maxTokenTTL {
		h.badRequest(w, r, fmt.Sprintf("ttl_seconds must be between 1 and %d", int64(maxTokenTTL/time.Second)))
		return
	}
	if len(req.Info) > 0 && !json.Valid(req.Info) {
		h.badRequest(w, r, "info is not JSON")
		return
	}
	claims := map[string]any{"sub": req.User, "exp": h.cfg.Now().Add(ttl).Unix()}
	if len(req.Info) > 0 && string(req.Info) != "null" {
		claims["info"] = req.Info
	}
	keys := h.keys.Load()
	key := keys.conn
	switch req.Kind {
	case "connection":
	case "subscription":
		if req.Channel == "" {
			h.badRequest(w, r, "a subscription token needs a channel")
			return
		}
		claims["channel"] = req.Channel
		key = keys.sub
	default:
		h.badRequest(w, r, fmt.Sprintf("kind must be connection or subscription, not %q", req.Kind))
		return
	}
	if key == "" {
		h.badRequest(w, r, "no HMAC key is configured for "+req.Kind+" tokens (client.token.hmac_secret_key, or client.subscription_token.hmac_secret_key when subscription tokens have their own)")
		return
	}
	tok, err := token.SignHMAC("HS256", []byte(key), claims)
	if err != nil {
		h.log.Error("admin token signing failed", "error", err)
		writeError(w, http.StatusInternalServerError, "signing failed")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"token": tok})
}
