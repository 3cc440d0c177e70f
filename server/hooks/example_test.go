package hooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gyrehq/gyre/server/hooks"
)

// A backend receiving channel state events checks the signature over the
// raw body before reading it.
func ExampleVerifySignature() {
	secret := []byte("a long random secret")
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if err := hooks.VerifySignature(r.Header.Get(hooks.SignatureHeader), body, secret, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var batch struct {
			Events []struct {
				ID      string `json:"id"`
				Channel string `json:"channel"`
				Type    string `json:"type"`
				TimeMs  int64  `json:"time_ms"`
			} `json:"events"`
		}
		if err := json.Unmarshal(body, &batch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, e := range batch.Events {
			fmt.Println(e.Type, e.Channel, e.ID)
		}
		_, _ = io.WriteString(w, `{"result":{}}`)
	}))
	defer backend.Close()

	s, err := hooks.NewSender(hooks.SenderConfig{Endpoint: backend.URL, Secret: secret})
	if err != nil {
		panic(err)
	}
	err = s.Send(context.Background(), []hooks.Event{
		{ID: "p3-1697206286533-0", Kind: hooks.KindChannel, Key: "chat:index", Type: hooks.TypeOccupied, TimeMs: 1697206286533},
	})
	fmt.Println("delivered:", err == nil)
	// Output:
	// occupied chat:index p3-1697206286533-0
	// delivered: true
}
