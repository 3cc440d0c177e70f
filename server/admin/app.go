package admin

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"strings"
)

// dist is the built web application (written by the application's build
// script; the repository holds a placeholder page).
//
//go:embed all:webui/dist
var dist embed.FS

// app serves the web application: proxied to WebProxyAddress, from
// WebPath, or embedded.
func (h *Handler) app() (http.Handler, error) {
	if a := h.cfg.WebProxyAddress; a != "" {
		u, err := url.Parse(a)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("admin: web_proxy_address %q is not an http(s) URL", a)
		}
		h.log.Info("admin web application proxied", "address", a)
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			h.log.Warn("admin web proxy failed", "address", a, "path", r.URL.Path, "error", err)
			http.Error(w, "admin web proxy: "+err.Error(), http.StatusBadGateway)
		}
		return rp, nil
	}
	var files fs.FS
	if p := h.cfg.WebPath; p != "" {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("admin: web_path: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("admin: web_path %q is not a directory", p)
		}
		if _, err := os.Stat(path.Join(p, "index.html")); err != nil {
			return nil, fmt.Errorf("admin: web_path %q has no index.html: %w", p, err)
		}
		files = os.DirFS(p)
	} else {
		sub, err := fs.Sub(dist, "webui/dist")
		if err != nil {
			return nil, fmt.Errorf("admin: embedded application: %w", err)
		}
		files = sub
	}
	return spa(h.cfg.Prefix, files), nil
}

// spa serves an application that routes on the client by the URL
// fragment (PREFIX/#/channels/chat:1): its index.html at prefix+"/" (and
// as index.html), the files of its build, and 404 for every other path.
// Mounted at the root, the application must not answer for the paths of
// endpoints that are turned off (/health, /metrics, /debug/pprof/, unknown
// API paths), which a fallback to index.html would make look alive.
func spa(prefix string, files fs.FS) http.Handler {
	fileServer := http.StripPrefix(prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean(strings.TrimPrefix(r.URL.Path, prefix)), "/")
		isIndex := name == "" || name == "." || name == "index.html"
		if !isIndex {
			st, err := fs.Stat(files, name)
			switch {
			case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid):
				http.Error(w, "admin: "+err.Error(), http.StatusInternalServerError)
				return
			case err != nil || st.IsDir():
				// Not a page of the application: a stale asset of an
				// older build, or a path of another endpoint.
				http.NotFound(w, r)
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if !isIndex {
			fileServer.ServeHTTP(w, r)
			return
		}
		index, err := fs.ReadFile(files, "index.html")
		if err != nil {
			http.Error(w, "admin: the web application has no index.html", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	})
}
