package api_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/api"
)

// echoRPC serves the rpc method in tests: "echo" answers its params,
// "fail" fails with an application error, "crash" with an error that is
// not one, anything else is unknown.
func echoRPC(_ context.Context, method string, params []byte) ([]byte, error) {
	switch method {
	case "echo":
		return params, nil
	case "fail":
		return nil, &gyre.Error{Code: 1001, Message: "insufficient funds"}
	case "crash":
		return nil, errors.New("backend connection refused")
	}
	return nil, &api.Error{Code: 104, Message: "not found"}
}

func TestRPC(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{RPC: echoRPC})
	cases := []struct {
		name, body, want string
		status           int
	}{
		{"echo", `{"method":"echo","params":{"a":[1,2]}}`, `{"result":{"data":{"a":[1,2]}}}`, 200},
		{"no params", `{"method":"echo"}`, `{"result":{"data":null}}`, 200},
		{"application error", `{"method":"fail"}`, `{"error":{"code":1001,"message":"insufficient funds"}}`, 200},
		{"internal error", `{"method":"crash"}`, `{"error":{"code":100,"message":"internal server error"}}`, 200},
		{"unknown method", `{"method":"nope"}`, `{"error":{"code":104,"message":"not found"}}`, 200},
		{"no method", `{"params":{}}`, `{"error":{"code":107,"message":"bad request: method required"}}`, 200},
		{"method not a string", `{"method":5}`, `{"error":{"code":107,"message":"bad request: method: number is not a string"}}`, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.post("rpc", tc.body)
			if status != tc.status {
				t.Fatalf("status %d: %s", status, body)
			}
			jsonEq(t, body, tc.want)
		})
	}
	// In a batch, next to other commands.
	status, body := e.post("batch", `{"commands":[{"rpc":{"method":"echo","params":"hi"}},{"rpc":{"method":"fail"}},{"presence_stats":{"channel":"pres:x"}}]}`)
	if status != http.StatusOK {
		t.Fatalf("batch: status %d: %s", status, body)
	}
	jsonEq(t, body, `{"replies":[{"rpc":{"data":"hi"}},{"error":{"code":1001,"message":"insufficient funds"}},{"presence_stats":{"num_clients":0,"num_users":0}}]}`)
}

// TestRPCWithoutHook: without Config.RPC every method is unknown, with
// the code and message Centrifugo answers.
func TestRPCWithoutHook(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{})
	status, body := e.post("rpc", `{"method":"anything","params":{}}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	jsonEq(t, body, `{"error":{"code":104,"message":"not found"}}`)
	status, _ = e.post("rpc", `{"method":"anything"}`, "X-Centrifugo-Error-Mode", "transport")
	if status != http.StatusNotFound {
		t.Fatalf("transport mode: status %d, want 404", status)
	}
}

// TestRPCBinary: a hook answering bytes that are not JSON gets them sent
// as a base64 string, so that the response stays JSON.
func TestRPCBinary(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Config{RPC: func(context.Context, string, []byte) ([]byte, error) {
		return []byte{0xff, 0x00, 0x01}, nil
	}})
	_, body := e.post("rpc", `{"method":"bin"}`)
	jsonEq(t, body, `{"result":{"data":"/wAB"}}`)
}
