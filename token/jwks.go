package token

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Key set fetching. The timeout, the single retry and the hour-long cache
// follow what Centrifugo documents for its JWKS support.
const (
	jwksTTL             = time.Hour
	jwksTimeout         = time.Second
	jwksRefreshInterval = 10 * time.Second // least time between fetches of one endpoint
	jwksMaxBody         = 1 << 20
	jwksMaxEndpoints    = 1024 // bounds the cache when the endpoint is a template
)

var templateVarRe = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// jwks finds verification keys in JSON Web Key Sets, one cached set per
// resolved endpoint.
type jwks struct {
	template             string
	vars                 []string // variables used by template, if any
	issuerRe, audienceRe *regexp.Regexp
	client               *http.Client
	ttl                  time.Duration
	refreshInterval      time.Duration

	mu   sync.Mutex // guards sets
	sets map[string]*keySet
}

// keySet is the cache of one endpoint. Readers load snap without locking;
// fetchMu makes concurrent misses wait for one fetch instead of each making
// their own.
type keySet struct {
	endpoint string
	snap     atomic.Pointer[keySnapshot]

	fetchMu     sync.Mutex
	lastAttempt time.Time // guarded by fetchMu
	lastErr     error     // guarded by fetchMu
}

type keySnapshot struct {
	keys    map[string]publicKey
	bad     map[string]error // kids present but unusable, with the reason
	fetched time.Time
}

func newJWKS(template string, issuerRe, audienceRe *regexp.Regexp) (*jwks, error) {
	j := &jwks{
		template:        template,
		issuerRe:        issuerRe,
		audienceRe:      audienceRe,
		client:          &http.Client{},
		ttl:             jwksTTL,
		refreshInterval: jwksRefreshInterval,
		sets:            make(map[string]*keySet),
	}
	for _, m := range templateVarRe.FindAllStringSubmatch(template, -1) {
		if !hasGroup(issuerRe, m[1]) && !hasGroup(audienceRe, m[1]) {
			return nil, fmt.Errorf("variable {{%s}} is not a named group of IssuerRegex or AudienceRegex", m[1])
		}
		j.vars = append(j.vars, m[1])
	}
	u, err := url.Parse(templateVarRe.ReplaceAllString(template, "x"))
	if err != nil {
		return nil, fmt.Errorf("parse URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", template)
	}
	return j, nil
}

func hasGroup(re *regexp.Regexp, name string) bool {
	return re != nil && re.SubexpIndex(name) >= 0
}

// keyFor returns the key named by the token's kid, from the endpoint its
// claims resolve to, once checked to suit the token's algorithm.
func (j *jwks) keyFor(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, errors.New("token: no kid header, required with a JWKS endpoint")
	}
	endpoint, err := j.endpoint(t.Claims)
	if err != nil {
		return nil, err
	}
	pk, err := j.lookup(j.set(endpoint), kid)
	if err != nil {
		return nil, err
	}
	if err := pk.accepts(t.Method); err != nil {
		return nil, err
	}
	return pk.key, nil
}

// endpoint fills the template from the (not yet verified) iss and aud. That
// is safe because the key then has to verify the signature, and the values
// are restricted to characters that cannot leave their place in the URL.
func (j *jwks) endpoint(claims jwt.Claims) (string, error) {
	if len(j.vars) == 0 {
		return j.template, nil
	}
	vals := make(map[string]string, len(j.vars))
	if j.issuerRe != nil {
		iss, _ := claims.GetIssuer()
		addGroups(vals, j.issuerRe, iss)
	}
	if j.audienceRe != nil {
		aud, _ := claims.GetAudience()
		for _, a := range aud {
			if addGroups(vals, j.audienceRe, a) {
				break
			}
		}
	}
	var err error
	out := templateVarRe.ReplaceAllStringFunc(j.template, func(m string) string {
		name := templateVarRe.FindStringSubmatch(m)[1]
		v, ok := vals[name]
		if !ok || !safeURLPart(v) {
			err = fmt.Errorf("token: no usable value for {{%s}} in iss or aud", name)
		}
		return v
	})
	return out, err
}

func addGroups(vals map[string]string, re *regexp.Regexp, s string) bool {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	for i, name := range re.SubexpNames() {
		if name != "" && m[i] != "" {
			vals[name] = m[i]
		}
	}
	return true
}

// safeURLPart accepts only unreserved URL characters and no "..", so a value
// can neither change the host nor climb the path.
func safeURLPart(s string) bool {
	if s == "" || strings.Contains(s, "..") {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~'
		if !ok {
			return false
		}
	}
	return true
}

func (j *jwks) set(endpoint string) *keySet {
	j.mu.Lock()
	defer j.mu.Unlock()
	s, ok := j.sets[endpoint]
	if !ok {
		if len(j.sets) >= jwksMaxEndpoints {
			for k := range j.sets { // evict one arbitrary entry
				delete(j.sets, k)
				break
			}
		}
		s = &keySet{endpoint: endpoint}
		j.sets[endpoint] = s
	}
	return s
}

// lookup finds kid in the cached set, fetching the set when it is stale or
// lacks kid, but never more often than refreshInterval, so that tokens with
// made-up kids cannot turn into a flood of requests to the endpoint.
func (j *jwks) lookup(s *keySet, kid string) (publicKey, error) {
	if snap := s.snap.Load(); snap != nil && time.Since(snap.fetched) < j.ttl {
		if k, ok := snap.keys[kid]; ok {
			return k, nil
		}
	}
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	snap := s.snap.Load()
	fresh := snap != nil && time.Since(snap.fetched) < j.ttl
	if fresh {
		if k, ok := snap.keys[kid]; ok {
			return k, nil
		}
	}
	if !s.lastAttempt.IsZero() && time.Since(s.lastAttempt) < j.refreshInterval {
		if s.lastErr != nil {
			return publicKey{}, fmt.Errorf("token: jwks %s unavailable: %w", s.endpoint, s.lastErr)
		}
		if fresh {
			return publicKey{}, snap.missing(kid)
		}
	}
	s.lastAttempt = time.Now()
	snap, err := j.fetch(s.endpoint)
	s.lastErr = err
	if err != nil {
		return publicKey{}, err
	}
	s.snap.Store(snap)
	if k, ok := snap.keys[kid]; ok {
		return k, nil
	}
	return publicKey{}, snap.missing(kid)
}

func (s *keySnapshot) missing(kid string) error {
	if err, ok := s.bad[kid]; ok {
		return fmt.Errorf("token: jwks key %q unusable: %w", kid, err)
	}
	return fmt.Errorf("token: unknown kid %q", kid)
}

// fetch loads the set, trying a second time if the first attempt fails.
func (j *jwks) fetch(endpoint string) (*keySnapshot, error) {
	snap, err := j.fetchOnce(endpoint)
	if err != nil {
		snap, err = j.fetchOnce(endpoint)
	}
	if err != nil {
		return nil, fmt.Errorf("token: fetch jwks %s: %w", endpoint, err)
	}
	return snap, nil
}

func (j *jwks) fetchOnce(endpoint string) (*keySnapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), jwksTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := j.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if len(body) > jwksMaxBody {
		return nil, fmt.Errorf("body over %d bytes", jwksMaxBody)
	}
	return parseKeySet(body)
}

// parseKeySet keeps the signature keys that have a kid. Keys it cannot use
// (encryption keys, unknown types) are remembered with the reason, so that a
// token naming one gets a useful error instead of "unknown kid".
func parseKeySet(body []byte) (*keySnapshot, error) {
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decode key set: %w", err)
	}
	snap := &keySnapshot{
		keys:    make(map[string]publicKey, len(doc.Keys)),
		bad:     make(map[string]error),
		fetched: time.Now(),
	}
	for _, k := range doc.Keys {
		if k.Kid == "" {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			snap.bad[k.Kid] = fmt.Errorf("use is %q", k.Use)
			continue
		}
		pk, err := k.parse()
		if err != nil {
			snap.bad[k.Kid] = err
			continue
		}
		snap.keys[k.Kid] = pk
	}
	return snap, nil
}
