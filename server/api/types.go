package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/gyrehq/gyre"
)

// apiError is an error of the API with its code.
type apiError struct {
	Code    uint32 `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("api: error %d: %s", e.Code, e.Message) }

var (
	errInternal              = &apiError{100, "internal server error"}
	errUnknownChannel        = &apiError{102, "unknown channel"}
	errPermissionDenied      = &apiError{103, "permission denied"}
	errMethodNotFound        = &apiError{104, "method not found"}
	errBadRequest            = &apiError{107, "bad request"}
	errNotAvailable          = &apiError{108, "not available"}
	errUnrecoverablePosition = &apiError{112, "unrecoverable position"}
)

// payload is the data of a publish: raw JSON in data, or base64 in b64data.
type payload struct {
	Data    json.RawMessage `json:"data"`
	B64Data string          `json:"b64data"`
}

func (p payload) bytes() ([]byte, error) {
	if p.B64Data != "" {
		b, err := base64.StdEncoding.DecodeString(p.B64Data)
		if err != nil {
			return nil, &apiError{107, "bad request: b64data: " + err.Error()}
		}
		return b, nil
	}
	if len(p.Data) == 0 {
		return nil, &apiError{107, "bad request: data required"}
	}
	return []byte(p.Data), nil
}

// publishFlags are the options publish and broadcast share.
type publishFlags struct {
	SkipHistory    bool              `json:"skip_history"`
	Tags           map[string]string `json:"tags"`
	IdempotencyKey string            `json:"idempotency_key"`
	Delta          bool              `json:"delta"`
}

func (f *publishFlags) options() gyre.PublishOptions {
	return gyre.PublishOptions{Tags: f.Tags, IdempotencyKey: f.IdempotencyKey, SkipHistory: f.SkipHistory, UseDelta: f.Delta}
}

type publishRequest struct {
	Channel string `json:"channel"`
	payload
	publishFlags
}

type publishResult struct {
	Offset uint64 `json:"offset,omitempty"`
	Epoch  string `json:"epoch,omitempty"`
}

type broadcastRequest struct {
	Channels []string `json:"channels"`
	payload
	publishFlags
}

type broadcastResult struct {
	Responses []reply `json:"responses"`
}

type streamPosition struct {
	Offset uint64 `json:"offset"`
	Epoch  string `json:"epoch"`
}

type subscribeRequest struct {
	Channel      string          `json:"channel"`
	User         string          `json:"user"`
	Client       string          `json:"client"`
	Session      string          `json:"session"`
	Info         json.RawMessage `json:"info"`
	Data         json.RawMessage `json:"data"`
	RecoverSince *streamPosition `json:"recover_since"`
	ExpireAt     int64           `json:"expire_at"`
}

type unsubscribeRequest struct {
	Channel string `json:"channel"`
	User    string `json:"user"`
	Client  string `json:"client"`
	Session string `json:"session"`
}

type disconnectRequest struct {
	User       string   `json:"user"`
	Client     string   `json:"client"`
	Session    string   `json:"session"`
	Whitelist  []string `json:"whitelist"`
	Disconnect *struct {
		Code   uint32 `json:"code"`
		Reason string `json:"reason"`
	} `json:"disconnect"`
}

type refreshRequest struct {
	User     string          `json:"user"`
	Client   string          `json:"client"`
	Session  string          `json:"session"`
	Expired  bool            `json:"expired"`
	ExpireAt int64           `json:"expire_at"`
	Info     json.RawMessage `json:"info"`
}

type channelRequest struct {
	Channel string `json:"channel"`
}

type clientInfo struct {
	User     string          `json:"user"`
	Client   string          `json:"client"`
	ConnInfo json.RawMessage `json:"conn_info,omitempty"`
	ChanInfo json.RawMessage `json:"chan_info,omitempty"`
}

type presenceResult struct {
	Presence map[string]clientInfo `json:"presence"`
}

type presenceStatsResult struct {
	NumClients int `json:"num_clients"`
	NumUsers   int `json:"num_users"`
}

type historyRequest struct {
	Channel string          `json:"channel"`
	Limit   int             `json:"limit"`
	Since   *streamPosition `json:"since"`
	Reverse bool            `json:"reverse"`
}

type publication struct {
	Data   json.RawMessage   `json:"data"`
	Info   *clientInfo       `json:"info,omitempty"`
	Offset uint64            `json:"offset,omitempty"`
	Tags   map[string]string `json:"tags,omitempty"`
}

type historyResult struct {
	Publications []publication `json:"publications"`
	Epoch        string        `json:"epoch,omitempty"`
	Offset       uint64        `json:"offset,omitempty"`
}

type channelsRequest struct {
	Pattern string `json:"pattern"`
}

type channelInfo struct {
	NumClients int `json:"num_clients"`
}

type channelsResult struct {
	Channels map[string]channelInfo `json:"channels"`
}

type nodeInfo struct {
	UID         string `json:"uid"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	NumClients  int    `json:"num_clients"`
	NumUsers    int    `json:"num_users"`
	NumChannels int    `json:"num_channels"`
	NumSubs     int    `json:"num_subs"`
	Uptime      int64  `json:"uptime"`
}

type infoResult struct {
	Nodes []nodeInfo `json:"nodes"`
}

type batchRequest struct {
	Commands []map[string]json.RawMessage `json:"commands"`
	Parallel bool                         `json:"parallel"`
}

type batchResult struct {
	Replies []batchReply `json:"replies"`
}

// batchReply is one command's answer in a batch: {"<method>":{...}} or
// {"error":{...}}. It is a struct rather than a map so that a batch of
// 100,000 commands costs no map per reply.
type batchReply struct {
	method string
	result any
	err    *apiError
}

func (r batchReply) MarshalJSON() ([]byte, error) {
	if r.err != nil {
		b, err := json.Marshal(r.err)
		if err != nil {
			return nil, fmt.Errorf("api: encode batch error: %w", err)
		}
		return append(append([]byte(`{"error":`), b...), '}'), nil
	}
	res, err := json.Marshal(r.result)
	if err != nil {
		return nil, fmt.Errorf("api: encode %s reply: %w", r.method, err)
	}
	name, _ := json.Marshal(r.method)
	out := make([]byte, 0, len(name)+len(res)+3)
	out = append(append(append(append(out, '{'), name...), ':'), res...)
	return append(out, '}'), nil
}

// reply is one method's answer: a result or an error.
type reply struct {
	Result any       `json:"result,omitempty"`
	Error  *apiError `json:"error,omitempty"`
}

type empty struct{}
