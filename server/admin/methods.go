package admin

import (
	"net/http"

	"github.com/gyrehq/gyre/server/api"
)

// methodJSON is one method of the methods route.
type methodJSON struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Fields  []string `json:"fields"`
}

// methods lists the API methods the web application's Actions page
// offers, from the API's method table, with the request fields it asks
// for.
func (h *Handler) methods(w http.ResponseWriter, r *http.Request) {
	var out []methodJSON
	for _, m := range api.Methods() {
		if len(m.Admin) > 0 {
			out = append(out, methodJSON{Name: m.Name, Summary: m.Summary, Fields: m.Admin})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"methods": out})
}
