package gyre

import (
	"errors"

	"github.com/gyrehq/gyre/protocol"
)

// Publish types of PublishRequest.type.
const (
	publishTypeStream int32 = 0
	publishTypeMap    int32 = 1
)

// mapPublishCmd handles a publish command of type map: a client writing
// (or, with removed, removing) a key of a map channel. The namespace's
// client_key, when set, decides the key; then the OnMapPublish or
// OnMapRemove handler, when set and handling the channel, decides the
// rest, else the namespace's map.allow_* rules do.
func (c *Client) mapPublishCmd(req *protocol.PublishRequest) (*protocol.Reply, error) {
	n := c.node
	opts, err := n.rules.Load().lookup(req.Channel)
	if err != nil {
		return nil, err
	}
	switch {
	case req.Type != publishTypeMap:
		n.log.Info("publish of an unknown type", "client", c.id, "channel", req.Channel, "type", req.Type)
		return nil, ErrorBadRequest
	case !opts.SubscriptionType.IsMap():
		n.log.Info("map publish to a stream channel", "client", c.id, "channel", req.Channel)
		return nil, ErrorBadRequest
	case n.mapBroker == nil:
		n.log.Info("map publish refused: no map broker configured", "client", c.id, "channel", req.Channel)
		return nil, ErrorNotAvailable
	}
	key, err := c.mapClientKey(opts, req)
	if err != nil {
		return nil, err
	}
	if req.Removed {
		err = c.mapRemoveByClient(opts, req, key)
	} else {
		err = c.mapWriteByClient(opts, req, key)
	}
	if err != nil {
		return nil, err
	}
	return &protocol.Reply{Publish: &protocol.PublishResult{}}, nil
}

// mapClientKey is the key a client's write or removal names: its own
// client or user id when the namespace's client_key says so (an anonymous
// client has no user id to write under), else the key it sent.
func (c *Client) mapClientKey(opts *ChannelOptions, req *protocol.PublishRequest) (string, error) {
	switch opts.Map.ClientKey {
	case MapClientKeyClientID:
		return c.id, nil
	case MapClientKeyUserID:
		user := c.UserID()
		if user == "" {
			c.node.log.Info("map publish refused: client_key is user_id and the client is anonymous", "client", c.id, "channel", req.Channel)
			return "", ErrorPermissionDenied
		}
		return user, nil
	}
	return req.Key, nil
}

// mapWriteByClient writes key for a client, as its handler or the
// namespace's rules allow.
func (c *Client) mapWriteByClient(opts *ChannelOptions, req *protocol.PublishRequest, key string) error {
	n := c.node
	m := &opts.Map
	var o MapPublishOptions
	handled := false
	if h := n.handlers.mapPublish; h != nil {
		rep, err := h(c.ctx, c, MapPublishEvent{Channel: req.Channel, Key: key, Data: req.Data})
		var done bool
		if handled, done, err = handlerOutcome(err, rep.Result != nil, rep.Key, &key); err != nil || done {
			return err
		}
		o = rep.Options
	}
	if err := c.mapAllowed("map publish", req.Channel, key, handled, m.AllowPublishForClient, m.AllowPublishForSubscriber, m.AllowPublishForAnonymous); err != nil {
		return err
	}
	if o.Data == nil {
		o.Data = req.Data
	}
	if o.ClientInfo == nil {
		o.ClientInfo = c.clientInfo(c.chanInfoOf(req.Channel))
	}
	_, err := n.mapPublish(c.ctx, opts, req.Channel, key, o)
	return err
}

// mapRemoveByClient removes key for a client, as its handler or the
// namespace's rules allow.
func (c *Client) mapRemoveByClient(opts *ChannelOptions, req *protocol.PublishRequest, key string) error {
	n := c.node
	m := &opts.Map
	var o MapRemoveOptions
	handled := false
	if h := n.handlers.mapRemove; h != nil {
		rep, err := h(c.ctx, c, MapRemoveEvent{Channel: req.Channel, Key: key})
		var done bool
		if handled, done, err = handlerOutcome(err, rep.Result != nil, rep.Key, &key); err != nil || done {
			return err
		}
		o = rep.Options
	}
	if err := c.mapAllowed("map remove", req.Channel, key, handled, m.AllowRemoveForClient, m.AllowRemoveForSubscriber, m.AllowRemoveForAnonymous); err != nil {
		return err
	}
	if o.ClientInfo == nil {
		o.ClientInfo = c.clientInfo(c.chanInfoOf(req.Channel))
	}
	_, err := n.mapRemove(c.ctx, opts, req.Channel, key, o)
	return err
}

// handlerOutcome reads what a map publish or remove handler returned:
// ErrNotHandled leaves the decision to the rules (handled false), another
// error refuses, a result (done) tells that the handler did the work
// itself, and a key (repKey) replaces *key.
func handlerOutcome(err error, done bool, repKey string, key *string) (handled, finished bool, _ error) {
	switch {
	case errors.Is(err, ErrNotHandled):
		return false, false, nil
	case err != nil:
		return false, false, err
	case done:
		return true, true, nil
	}
	if repKey != "" {
		*key = repKey
	}
	return true, false, nil
}

// mapAllowed refuses, with a line naming op, a client's write or removal
// that no handler decided (handled) and the namespace's allow_* rule
// does not allow, or whose key a map channel does not take.
func (c *Client) mapAllowed(op, channel, key string, handled, forClient, forSubscriber, forAnonymous bool) error {
	if !handled && !c.channelPermission(channel, forClient, forSubscriber, forAnonymous) {
		c.node.log.Info(op+" refused: not allowed", "client", c.id, "channel", channel)
		return ErrorPermissionDenied
	}
	if err := checkMapKey(key); err != nil {
		c.node.log.Info(op+" refused: key empty or too long", "client", c.id, "channel", channel, "key_length", len(key))
		return err
	}
	return nil
}

// chanInfoOf is the channel info of the client's subscription to
// channel, nil when it has none.
func (c *Client) chanInfoOf(channel string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.subs[channel]; s != nil {
		return s.chanInfo
	}
	return nil
}
