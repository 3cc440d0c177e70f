package admin

import (
	"encoding/base64"
	"encoding/json"

	"github.com/gyrehq/gyre"
)

// publicationJSON is a publication as the admin routes show it. Data that
// is JSON is inlined in data; anything else is in b64data, base64.
type publicationJSON struct {
	Channel string            `json:"channel,omitempty"`
	Offset  uint64            `json:"offset"`
	Data    json.RawMessage   `json:"data,omitempty"`
	B64Data string            `json:"b64data,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
	Info    *clientInfoJSON   `json:"info,omitempty"`
	TimeMS  int64             `json:"time_ms,omitempty"`
	// Kept is set by the filter route only.
	Kept *bool `json:"kept,omitempty"`
}

type clientInfoJSON struct {
	User   string `json:"user"`
	Client string `json:"client"`
}

func newPublicationJSON(channel string, p *gyre.Publication) publicationJSON {
	out := publicationJSON{Channel: channel, Offset: p.Offset, Tags: p.Tags, TimeMS: p.Time}
	if len(p.Data) > 0 && json.Valid(p.Data) {
		out.Data = json.RawMessage(p.Data)
	} else if len(p.Data) > 0 {
		out.B64Data = base64.StdEncoding.EncodeToString(p.Data)
	}
	if p.Info != nil {
		out.Info = &clientInfoJSON{User: p.Info.UserID, Client: p.Info.ClientID}
	}
	return out
}
