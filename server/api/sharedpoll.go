package api

import (
	"context"
	"errors"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// Shared-poll channels (subscription_type shared_poll): their values come
// from polling the backend; shared_poll_publish sets one without waiting
// for the next poll, in versioned namespaces that enable it. Publications
// have no place in them.

// SharedPollPublishRequest sets Key of a shared-poll channel to Data (or
// B64Data, base64, which wins) at Version, above 0, of the backend's
// Epoch of versions.
type SharedPollPublishRequest struct {
	Channel string  `json:"channel"`
	Key     string  `json:"key"`
	Data    Payload `json:"data"`
	B64Data string  `json:"b64data"`
	Version uint64  `json:"version"`
	Epoch   string  `json:"epoch"`
}

// errSharedPollChannel refuses a publication into a shared-poll channel.
var errSharedPollChannel = &Error{107, "bad request: a shared_poll channel takes no publications (shared_poll_publish sets a key)"}

// publishable refuses, when the executor knows them (Config.SharedPoll),
// publications into shared-poll channels: their subscribers would get
// publications where the protocol has them expect keys' values.
func (e *Executor) publishable(channel string) error {
	if e.sharedPoll != nil && e.sharedPoll(channel) {
		return errSharedPollChannel
	}
	return nil
}

// SharedPollPublish sets a key of a shared-poll channel on every node,
// for the clients that track it.
func (e *Executor) SharedPollPublish(ctx context.Context, r *SharedPollPublishRequest) (EmptyResult, error) {
	switch {
	case r.Channel == "":
		return EmptyResult{}, errNoChannel
	case r.Key == "":
		return EmptyResult{}, &Error{107, "bad request: key required"}
	case r.Version == 0:
		return EmptyResult{}, &Error{107, "bad request: version required: a value reaches clients when its version grows"}
	}
	data, err := optionalPayload(r.Data, r.B64Data, "b64data")
	if err != nil {
		return EmptyResult{}, err
	}
	item := gyre.SharedPollItem{Key: r.Key, Data: data, Version: r.Version}
	if err := e.node.SharedPollPublish(ctx, r.Channel, item, r.Epoch); err != nil {
		return EmptyResult{}, e.failed("shared_poll_publish", r.Channel, sharedPollFailed(err))
	}
	return EmptyResult{}, nil
}

// sharedPollFailed maps the node's error of SharedPollPublish: a channel
// of another type is a bad request (107), a namespace without
// publish_enabled refuses it (108); an unknown namespace comes as the
// node's 102, anything else as 100.
func sharedPollFailed(err error) error {
	switch {
	case errors.Is(err, gyre.ErrNotSharedPoll):
		return &Error{107, "bad request: not a shared_poll channel"}
	case errors.Is(err, gyre.ErrSharedPollPublishDisabled):
		return &Error{108, "not available: the channel's namespace does not enable shared_poll.publish_enabled"}
	}
	return err
}

func grpcSharedPollPublishRequest(r *apipb.SharedPollPublishRequest) (*SharedPollPublishRequest, *Error) {
	if err := notJSON("data", r.GetData(), "b64data"); err != nil {
		return nil, err
	}
	return &SharedPollPublishRequest{
		Channel: r.GetChannel(), Key: r.GetKey(), Data: r.GetData(), B64Data: r.GetB64Data(),
		Version: r.GetVersion(), Epoch: r.GetEpoch(),
	}, nil
}
