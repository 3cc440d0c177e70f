package grpcapi

import (
	"encoding/json"

	"github.com/gyrehq/gyre/server/api"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// The payloads of the server API are JSON: over HTTP by construction,
// over gRPC because the checks below refuse anything else with 107. A
// JSON client receives data and info as they are, inside its JSON frames:
// bytes that are not JSON would close every JSON subscriber of the
// channel with 3506, a fault of the publisher that the subscribers would
// pay for. Binary payloads meant for protobuf clients go in b64data and
// b64info, which are not checked. encoding/json.Valid is the check the
// engine makes too when it encodes a publication for JSON clients
// (protocol's own reader measured no faster at it).

// notJSON is the error of a payload field that holds bytes that are not
// JSON; nil for an empty field or JSON. binary names the field that takes
// binary payloads instead, if the request has one.
func notJSON(field string, b []byte, binary string) *api.Error {
	if len(b) == 0 || json.Valid(b) {
		return nil
	}
	msg := "bad request: " + field + " is not JSON"
	if binary != "" {
		msg += " (binary payloads go in " + binary + ")"
	}
	return &api.Error{Code: 107, Message: msg}
}

func checkPublish(r *apipb.PublishRequest) *api.Error {
	return notJSON("data", r.GetData(), "b64data")
}

func checkBroadcast(r *apipb.BroadcastRequest) *api.Error {
	return notJSON("data", r.GetData(), "b64data")
}

func checkSubscribe(r *apipb.SubscribeRequest) *api.Error {
	if err := notJSON("info", r.GetInfo(), "b64info"); err != nil {
		return err
	}
	return notJSON("data", r.GetData(), "b64data")
}

func checkRefresh(r *apipb.RefreshRequest) *api.Error {
	return notJSON("info", r.GetInfo(), "")
}

func checkRPC(r *apipb.RPCRequest) *api.Error {
	return notJSON("params", r.GetParams(), "")
}

// checkCommand checks the payloads of a batch command; on a refusal it
// names the command's method too.
func checkCommand(c *apipb.Command) (string, *api.Error) {
	switch {
	case c.GetPublish() != nil:
		return "publish", checkPublish(c.GetPublish())
	case c.GetBroadcast() != nil:
		return "broadcast", checkBroadcast(c.GetBroadcast())
	case c.GetSubscribe() != nil:
		return "subscribe", checkSubscribe(c.GetSubscribe())
	case c.GetRefresh() != nil:
		return "refresh", checkRefresh(c.GetRefresh())
	case c.GetRpc() != nil:
		return "rpc", checkRPC(c.GetRpc())
	}
	return "", nil
}
