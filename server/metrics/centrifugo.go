package metrics

import (
	dto "github.com/prometheus/client_model/go"
)

// The series of Centrifugo v6 that Gyre serves (Options.Centrifugo), each
// read from the gyre_* family that measures the same thing. Their names,
// types, labels and label values are Centrifugo's, so that its dashboards
// and alerts work unchanged; docs/metrics.md lists them beside their Gyre
// families, and the Centrifugo series Gyre has no measurement for.
//
// Labels Centrifugo fills only when configured to (channel_namespace,
// accept_protocol) are empty, as in a Centrifugo with default settings.
// A label set maps to one label set: the table drops no Gyre label that
// holds more than one value, but in the series it marks summed, whose
// value is the sum of the Gyre series mapping to it.
var centrifugoSeries = []compatSeries{
	gauge("centrifugo_node_num_clients", "gyre_node_connections", "Clients connected to the node."),
	gauge("centrifugo_node_num_users", "gyre_node_users", "Distinct users connected to the node."),
	gauge("centrifugo_node_num_channels", "gyre_node_channels", "Channels with subscribers on the node."),
	gauge("centrifugo_node_num_subscriptions", "gyre_node_subscriptions", "Subscriptions on the node."),
	gauge("centrifugo_node_num_nodes", "gyre_cluster_nodes", "Nodes in the cluster."),
	gauge("centrifugo_node_build", "gyre_build_info", "The running version (always 1).", same("version")),
	counter("centrifugo_node_messages_sent_count", "gyre_broker_messages_sent_total", "Messages the node sent to its broker, by type.",
		same("type"), noNamespace),
	counter("centrifugo_node_messages_received_count", "gyre_broker_messages_received_total", "Messages the node received from its broker, by type.",
		same("type"), noNamespace),
	histogram("centrifugo_node_broadcast_duration_seconds", "gyre_node_broadcast_duration_seconds", "Time to hand a publication to the node's subscribers.",
		centrifugoBroadcastBuckets, fixed("type", "publication"), noNamespace),
	counter("centrifugo_node_tags_filter_dropped_publications", "gyre_node_publications_filtered_total", "Publications kept from subscribers by their tags filter.",
		noNamespace),

	counter("centrifugo_client_connections_accepted", "gyre_client_connections_accepted_total", "Connections accepted.",
		same("transport"), fixed("accept_protocol", ""), same("client_name"), same("client_version")),
	gauge("centrifugo_client_connections_inflight", "gyre_client_connections", "Connections open.",
		same("transport"), fixed("accept_protocol", ""), same("client_name"), same("client_version")),
	counter("centrifugo_client_subscriptions_accepted", "gyre_client_subscriptions_accepted_total", "Subscriptions accepted.",
		same("client_name"), noNamespace),
	gauge("centrifugo_client_subscriptions_inflight", "gyre_client_subscriptions", "Subscriptions open.",
		same("client_name"), noNamespace),
	summary("centrifugo_client_command_duration_seconds", "gyre_client_command_duration_seconds", "Client command duration, quantiles over the last 10 minutes.",
		same("method"), noNamespace),
	histogram("centrifugo_client_command_duration_seconds_histogram", "gyre_client_command_duration_seconds", "Client command duration.",
		centrifugoCommandBuckets, same("method"), noNamespace),
	counter("centrifugo_client_num_reply_errors", "gyre_client_command_errors_total", "Error replies to client commands.",
		same("method"), same("code"), noNamespace),
	counter("centrifugo_client_num_server_disconnects", "gyre_client_disconnects_total", "Connections the server closed, by code.",
		same("code")).
		where("code", func(code string) bool { return code != "3000" }),
	counter("centrifugo_client_num_server_unsubscribes", "gyre_client_server_unsubscribes_total", "Subscriptions the server ended, by code.",
		same("code"), noNamespace),
	counter("centrifugo_client_recover", "gyre_client_recoveries_total", "Recoveries, by outcome.",
		same("recovered"), noNamespace, same("has_recovered_publications")),
	histogram("centrifugo_client_recovered_publications", "gyre_client_recovered_publications", "Publications given by a recovery.",
		recoveredBuckets, noNamespace),

	counter("centrifugo_transport_messages_sent", "gyre_client_messages_sent_total", "Messages sent to clients, by transport and frame type.",
		same("transport"), same("frame_type"), noNamespace),
	counter("centrifugo_transport_messages_sent_size", "gyre_client_messages_sent_bytes_total", "Bytes of the messages sent to clients, by transport and frame type.",
		same("transport"), same("frame_type"), noNamespace),
	counter("centrifugo_transport_messages_received", "gyre_client_commands_total", "Messages received from clients, by transport and frame type.",
		same("transport"), renamed("frame_type", "method", map[string]string{"pong": "client_pong"}), noNamespace),
	counter("centrifugo_transport_messages_received_size", "gyre_client_command_bytes_total", "Bytes of the messages received from clients, by transport and frame type.",
		same("transport"), renamed("frame_type", "method", map[string]string{"pong": "client_pong"}), noNamespace),

	summary("centrifugo_api_command_duration_seconds", "gyre_api_call_duration_seconds", "Server API call duration, quantiles over the last 10 minutes.",
		same("protocol"), same("method")),
	histogram("centrifugo_api_command_duration_seconds_histogram", "gyre_api_call_duration_seconds", "Server API call duration.",
		centrifugoDefaultBuckets, same("protocol"), same("method")),
	counter("centrifugo_api_command_errors_total", "gyre_api_calls_total", "Server API calls that failed, by error code.",
		same("protocol"), same("method"), renamed("error", "result", nil)).
		where("result", func(r string) bool { return r != "ok" }),

	summary("centrifugo_proxy_duration_seconds", "gyre_proxy_call_duration_seconds", "Proxy call duration, quantiles over the last 10 minutes.",
		same("protocol"), same("type"), same("name")),
	histogram("centrifugo_proxy_duration_seconds_histogram", "gyre_proxy_call_duration_seconds", "Proxy call duration.",
		centrifugoDefaultBuckets, same("protocol"), same("type"), same("name")),
	counter("centrifugo_proxy_errors", "gyre_proxy_call_errors_total", "Proxy calls that failed.",
		same("protocol"), same("type"), same("name")),
	gauge("centrifugo_proxy_inflight_requests", "gyre_proxy_calls_in_flight", "Proxy calls in flight.",
		same("protocol"), same("type"), same("name")),

	counter("centrifugo_broker_redis_pub_sub_errors", "gyre_redis_pubsub_errors_total", "Errors of the Redis pub/sub connections, by kind.",
		fixed("broker_name", ""), same("error")),

	// Centrifugo counts a message that can never run (it logs and skips
	// it) as processed, and as errors every failed attempt to run a
	// message or to read its source: Gyre's skipped, retries and source
	// errors fall into those two counters.
	counter("centrifugo_consumers_messages_processed_total", "gyre_consumer_messages_total", "Messages a consumer processed (skipped ones included).",
		renamed("consumer_name", "consumer", nil)).summed(),
	counter("centrifugo_consumers_errors_total", "gyre_consumer_retries_total", "Failed attempts of a consumer: to run a message, or to read its source.",
		renamed("consumer_name", "consumer", nil)).summed("gyre_consumer_source_errors_total"),
}

// noNamespace is the channel_namespace label of a Centrifugo that does not
// label by namespace, its default.
var noNamespace = fixed("channel_namespace", "")

func gauge(name, from, help string, labels ...compatLabel) compatSeries {
	return compatSeries{name: name, from: from, help: help, typ: dto.MetricType_GAUGE, labels: labels}
}

func counter(name, from, help string, labels ...compatLabel) compatSeries {
	return compatSeries{name: name, from: from, help: help, typ: dto.MetricType_COUNTER, labels: labels}
}

func histogram(name, from, help string, buckets []float64, labels ...compatLabel) compatSeries {
	return compatSeries{name: name, from: from, help: help, typ: dto.MetricType_HISTOGRAM, labels: labels, buckets: buckets}
}

// summary is a Centrifugo summary read from a Gyre histogram: its
// quantiles are estimated from the buckets filled in the last 10 minutes.
func summary(name, from, help string, labels ...compatLabel) compatSeries {
	return compatSeries{name: name, from: from, help: help, typ: dto.MetricType_SUMMARY, labels: labels}
}

func same(name string) compatLabel { return compatLabel{name: name, from: name} }

func fixed(name, value string) compatLabel { return compatLabel{name: name, value: value} }

// renamed is the label name holding the Gyre label from's value, with the
// values in rename replaced.
func renamed(name, from string, rename map[string]string) compatLabel {
	return compatLabel{name: name, from: from, rename: rename}
}
