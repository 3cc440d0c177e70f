package gyre

import (
	"context"
	"log/slog"
)

// Map presence: a stream namespace with map_clients_presence_channel_prefix
// P keeps, for each of its channels ch, the map channel P+ch of the
// clients subscribed to ch, one key per client id holding its ClientInfo;
// with map_users_presence_channel_prefix Q, the map channel Q+ch of its
// users, one key per user id. A subscriber's keys are written when it
// subscribes, only if new (a key already there just lives longer), and
// again at every presence refresh, so that they outlive it only by the
// map channel's KeyTTL. Its client key is removed when it leaves; its
// user key is left to expire, as other connections of the user may still
// be subscribed.

// hasMapPresence reports whether subscriptions to the namespace's
// channels keep map presence.
func (o *ChannelOptions) hasMapPresence() bool {
	return o.MapClientsPresenceChannelPrefix != "" || o.MapUsersPresenceChannelPrefix != ""
}

// addMapPresence writes (or keeps alive) the map presence keys of the
// client's subscription s.
func (c *Client) addMapPresence(s *subscription) {
	o := s.opts
	if p := o.MapClientsPresenceChannelPrefix; p != "" {
		c.writeMapPresence(p+s.channel, c.id, c.clientInfo(s.chanInfo))
	}
	if p := o.MapUsersPresenceChannelPrefix; p != "" {
		if user := c.UserID(); user != "" {
			c.writeMapPresence(p+s.channel, user, nil)
		}
	}
}

func (c *Client) writeMapPresence(channel, key string, info *ClientInfo) {
	_, err := c.node.MapPublish(context.Background(), channel, key, MapPublishOptions{
		ClientInfo: info, KeyMode: KeyModeIfNew, RefreshTTLOnSuppress: true,
	})
	if err != nil {
		c.node.logBrokerFailure("presence", slog.LevelError, "write map presence", "channel", channel, "error", err)
	}
}

// removeMapPresence removes the client's key from the map presence of
// its subscription s (its user's key expires).
func (c *Client) removeMapPresence(s *subscription) {
	if p := s.opts.MapClientsPresenceChannelPrefix; p != "" {
		c.removeMapKey(p+s.channel, "remove map presence")
	}
}

// removeMapKey removes the key named by the client's id from a map
// channel; what names the removal in the log line is why.
func (c *Client) removeMapKey(channel, why string) {
	_, err := c.node.MapRemove(context.Background(), channel, c.id, MapRemoveOptions{ClientInfo: c.clientInfo(nil)})
	if err != nil {
		c.node.logBrokerFailure("presence", slog.LevelError, why, "channel", channel, "error", err)
	}
}

// leaveMap undoes, when s ends, what its map presence or its namespace's
// remove_client_on_unsubscribe keep of the client.
func (c *Client) leaveMap(s *subscription) {
	if s.mapPresence {
		c.removeMapPresence(s)
	}
	if s.isMap && s.opts.Map.RemoveClientOnUnsubscribe {
		c.removeMapKey(s.channel, "remove the client's key on unsubscribe")
	}
}
