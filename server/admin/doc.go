// Package admin serves the admin web interface of a Gyre server: the web
// application (embedded from webui/dist, read from a directory, or proxied
// to a development server) and the JSON routes it calls under
// PREFIX/admin/.
//
// Three routes are those of Centrifugo's admin interface, so that its
// tools work: PREFIX/admin/auth (a password for a session token),
// PREFIX/admin/init (what the application needs to start) and
// PREFIX/admin/api (the server API in its legacy form, the method in the
// body). The others are Gyre's own: tail (Server-Sent Events of a
// channel's publications), nodes (the cluster's nodes and their load),
// consumers and event_hooks (this node's consumers and the queues of its
// event hook proxies), filter (a tag filter expression tried on a channel's history) and token
// (connection and subscription tokens for testing). docs/admin_api.md
// describes every route.
package admin
