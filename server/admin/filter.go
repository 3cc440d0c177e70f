package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gyrehq/gyre/filter"
)

type filterRequest struct {
	Filter  string `json:"filter"`
	Channel string `json:"channel"`
	Limit   int    `json:"limit"`
}

// maxFilterLimit caps how much history the filter route reads.
const maxFilterLimit = 1000

// filter parses a filter expression, shows its tree and normalised text,
// and marks which of the channel's recent publications it keeps.
func (h *Handler) filter(w http.ResponseWriter, r *http.Request) {
	var req filterRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		h.badRequest(w, r, "unreadable JSON body: "+err.Error())
		return
	}
	if req.Limit <= 0 {
		req.Limit = 20
	}
	if req.Limit > maxFilterLimit {
		req.Limit = maxFilterLimit
	}
	tree, err := filter.Parse(req.Filter)
	if err != nil {
		var se *filter.SyntaxError
		if errors.As(err, &se) {
			h.log.Info("admin filter refused", "remote", r.RemoteAddr, "error", err)
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": se.Error(), "position": se.Pos}})
			return
		}
		h.badRequest(w, r, err.Error())
		return
	}
	f, err := filter.Compile(tree, filter.Limits{})
	if err != nil {
		h.badRequest(w, r, err.Error())
		return
	}
	treeJSON, err := filter.TreeJSON(tree)
	if err != nil {
		h.badRequest(w, r, err.Error())
		return
	}
	pubs := []publicationJSON{}
	if req.Channel != "" {
		hist, _, err := h.node.History(req.Channel, req.Limit, nil, true)
		if err != nil {
			h.badRequest(w, r, fmt.Sprintf("history of %q: %v", req.Channel, err))
			return
		}
		for _, p := range hist {
			pj := newPublicationJSON("", p)
			kept := f.Match(p.Tags)
			pj.Kept = &kept
			pubs = append(pubs, pj)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"node":         json.RawMessage(treeJSON),
		"expression":   filter.Format(tree),
		"publications": pubs,
	})
}

func (h *Handler) badRequest(w http.ResponseWriter, r *http.Request, msg string) {
	h.log.Info("admin request refused", "path", r.URL.Path, "remote", r.RemoteAddr, "reason", msg)
	writeError(w, http.StatusBadRequest, msg)
}
