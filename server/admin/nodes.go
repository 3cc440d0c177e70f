package admin

import "net/http"

// nodeJSON is one node of the nodes route.
type nodeJSON struct {
	ID            string  `json:"id"`
	Name          string  `json:"name"`
	Version       string  `json:"version"`
	UptimeSeconds int64   `json:"uptime_seconds"`
	NumClients    int     `json:"num_clients"`
	NumUsers      int     `json:"num_users"`
	NumSubs       int     `json:"num_subs"`
	NumChannels   int     `json:"num_channels"`
	PublishRate   float64 `json:"publish_rate"`
	MemoryBytes   uint64  `json:"memory_bytes"`
	BrokerHealthy bool    `json:"broker_healthy"`
	BrokerError   string  `json:"broker_error"`
}

// nodes lists the nodes of the cluster as they last announced themselves
// (this one as it is now), this one first.
func (h *Handler) nodes(w http.ResponseWriter, r *http.Request) {
	infos := h.node.Info()
	out := make([]nodeJSON, 0, len(infos))
	for _, i := range infos {
		out = append(out, nodeJSON{
			ID: i.ID, Name: i.Name, Version: i.Version,
			UptimeSeconds: int64(i.Uptime.Seconds()),
			NumClients:    i.NumClients, NumUsers: i.NumUsers, NumSubs: i.NumSubs, NumChannels: i.NumChannels,
			PublishRate: i.PublishRate, MemoryBytes: i.MemoryBytes,
			BrokerHealthy: i.BrokerHealthy, BrokerError: i.BrokerError,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": out})
}
