// Command proxy-backend is a small application backend for Gyre's HTTP
// proxies (docs/proxy.md): it accepts every connection whose
// Authorization header (or connect data) names a user, lets users
// subscribe to channels of the "room" namespace, stamps publications with
// their author, and answers the RPC method "time".
//
//	go run . -addr 127.0.0.1:3000
//
// with gyre configured as in docs/proxy.md ("A small backend"). With
// -default-user NAME, connections that name no user are NAME's.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strings"
	"time"
)

// defaultUser, when set, is the user of connections that name none.
var defaultUser string

func main() {
	addr := flag.String("addr", "127.0.0.1:3000", "address to listen on")
	flag.StringVar(&defaultUser, "default-user", "", "user of connections that name none (for trying out and benchmarks); empty refuses them")
	flag.Parse()
	http.HandleFunc("POST /centrifugo/connect", hook(connect))
	http.HandleFunc("POST /centrifugo/subscribe", hook(subscribe))
	http.HandleFunc("POST /centrifugo/publish", hook(publish))
	http.HandleFunc("POST /centrifugo/rpc", hook(rpc))
	log.Printf("proxy backend on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}

// request holds the fields of Gyre's proxy requests this backend reads.
type request struct {
	Client  string          `json:"client"`
	User    string          `json:"user"`
	Channel string          `json:"channel"`
	Method  string          `json:"method"`
	Data    json.RawMessage `json:"data"`
	Meta    json.RawMessage `json:"meta"`
}

// reply is {"result": ...}, {"error": ...} or {"disconnect": ...}.
type reply map[string]any

func result(v any) reply { return reply{"result": v} }

func refuse(code int, message string) reply {
	return reply{"error": map[string]any{"code": code, "message": message}}
}

// hook decodes a proxy request and writes the handler's reply as JSON.
func hook(f func(r *http.Request, req request) reply) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(f(r, req))
	}
}

func connect(r *http.Request, req request) reply {
	// A real backend checks a session cookie or a bearer token here
	// (forwarded when listed in http_headers).
	user := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if user == "" {
		var d struct {
			User string `json:"user"`
		}
		_ = json.Unmarshal(req.Data, &d)
		user = d.User
	}
	if user == "" {
		user = defaultUser
	}
	if user == "" {
		return reply{"disconnect": map[string]any{"code": 4501, "reason": "unauthorized"}}
	}
	return result(map[string]any{
		"user": user,
		"info": map[string]any{"name": user},
		"meta": map[string]any{"since": time.Now().Unix()},
	})
}

func subscribe(_ *http.Request, req request) reply {
	if !strings.HasPrefix(req.Channel, "room:") {
		return refuse(403, "permission denied")
	}
	return result(map[string]any{})
}

func publish(_ *http.Request, req request) reply {
	var msg map[string]any
	if err := json.Unmarshal(req.Data, &msg); err != nil || msg == nil {
		return refuse(400, "publish a JSON object")
	}
	msg["author"] = req.User
	return result(map[string]any{"data": msg})
}

func rpc(_ *http.Request, req request) reply {
	if req.Method != "time" {
		return refuse(404, "unknown method")
	}
	return result(map[string]any{"data": map[string]any{"unix": time.Now().Unix()}})
}
