package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
)

// streamRef is one of the store's streams: its handle, the subject
// prefix of its channels and, for a history stream, the stream that
// copies the last message of each of its subjects.
type streamRef struct {
	name   string
	base   string // ends in '.'; a channel's subject is base + token
	s      js.Stream
	copies js.Stream
}

func (r *streamRef) subject(channel string) string { return r.base + token(channel) }

// historyStream returns the stream of ttl, creating it and its copy
// stream on first use. A stream that exists already (made by another
// node, or before a restart) is taken as it is.
//
// The copy stream sources the history stream and keeps one message per
// subject for Config.MetaTTL: when HistoryTTL has expired every
// publication of a channel, its last position is still there, with no
// write of the store's own (nats-server 2.9 has no per-message TTL to keep
// the last message alive).
func (s *Store) historyStream(ttl time.Duration) (*streamRef, error) {
	s.mu.Lock()
	r := s.byTTL[ttl]
	s.mu.Unlock()
	if r != nil {
		return r, nil
	}
	name, base := s.names.history(ttl)
	if r := s.knownStream(name); r != nil {
		s.mu.Lock()
		s.byTTL[ttl] = r
		s.mu.Unlock()
		return r, nil
	}
	st, err := s.createStream(js.StreamConfig{
		Name:              name,
		Subjects:          []string{base + "*"},
		Storage:           js.FileStorage,
		Retention:         js.LimitsPolicy,
		Discard:           js.DiscardOld,
		MaxMsgsPerSubject: -1,
		MaxAge:            ttl,
		Duplicates:        min(time.Minute, ttl),
		Replicas:          s.cfg.Replicas,
		AllowDirect:       true,
	})
	if err != nil {
		return nil, err
	}
	// Made after its source: a source missing at creation is retried by
	// the server only after seconds.
	cp, err := s.createStream(s.singleConfig(copies(name), "", s.cfg.MetaTTL, name))
	if err != nil {
		return nil, err
	}
	return s.remember(&streamRef{name: name, base: base, s: st, copies: cp}), nil
}

// singleConfig is the configuration of a stream that keeps one message
// per subject for maxAge: of subjects base.*, or copied from source.
func (s *Store) singleConfig(name, base string, maxAge time.Duration, source string) js.StreamConfig {
	c := js.StreamConfig{
		Name:              name,
		Storage:           js.FileStorage,
		Retention:         js.LimitsPolicy,
		Discard:           js.DiscardOld,
		MaxMsgsPerSubject: 1,
		MaxAge:            maxAge,
		Duplicates:        min(time.Minute, maxAge),
		Replicas:          s.cfg.Replicas,
		AllowDirect:       true,
	}
	if base != "" {
		c.Subjects = []string{base + "*"}
	}
	if source != "" {
		c.Sources = []*js.StreamSource{{Name: source}}
	}
	return c
}

// single returns one of the store's one-message-per-subject streams
// (records, idempotency results, delta bases), creating it on first use.
func (s *Store) single(name, base string, maxAge time.Duration) (*streamRef, error) {
	if r := s.knownStream(name); r != nil {
		return r, nil
	}
	st, err := s.createStream(s.singleConfig(name, base, maxAge, ""))
	if err != nil {
		return nil, err
	}
	return s.remember(&streamRef{name: name, base: base, s: st}), nil
}

// metaStream returns the stream of epoch records (one message per channel).
func (s *Store) metaStream() (*streamRef, error) {
	name, base := s.names.meta()
	return s.single(name, base, s.cfg.MetaTTL)
}

// idemStream returns the stream of idempotency results (one message per
// channel and key).
func (s *Store) idemStream() (*streamRef, error) {
	name, base := s.names.idem()
	return s.single(name, base, s.cfg.MaxIdempotentResultTTL)
}

// deltaStream returns the stream of the delta bases of channels without
// history (one message per channel).
func (s *Store) deltaStream() (*streamRef, error) {
	name, base := s.names.delta()
	return s.single(name, base, s.cfg.MetaTTL)
}

func (s *Store) knownStream(name string) *streamRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[name]
}

func (s *Store) createStream(cfg js.StreamConfig) (js.Stream, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	// Looked up first: nats-server 2.9 loses direct gets sent while it
	// handles a create of a stream that exists.
	st, err := s.js.Stream(ctx, cfg.Name)
	if errors.Is(err, js.ErrStreamNotFound) {
		st, err = s.js.CreateStream(ctx, cfg)
		if errors.Is(err, js.ErrStreamNameAlreadyInUse) || madeMeanwhile(err) {
			// Same name, other settings (replicas, TTLs of the config
			// changed since it was made): the limits that matter are in
			// the name. Or another node created it between the lookup
			// and the create.
			st, err = s.js.Stream(ctx, cfg.Name)
		}
	}
	if err == nil {
		err = s.awaitDirect(ctx, st)
	}
	if err != nil {
		return nil, wrap("create stream "+cfg.Name, err)
	}
	return st, nil
}

// errCodeSubjectOverlap is the server's answer to a create of a stream
// whose subjects another stream holds: what a create racing another
// node's create of the same stream may get instead of "name in use".
const errCodeSubjectOverlap js.ErrorCode = 10065

// madeMeanwhile reports whether a create failed because another stream
// (the same one, made by another node meanwhile) holds its subjects.
func madeMeanwhile(err error) bool {
	var apiErr *js.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeSubjectOverlap
}

// directProbe bounds each direct get of awaitDirect.
const directProbe = 100 * time.Millisecond

// awaitDirect returns once the stream answers direct gets: nats-server
// 2.9 drops those sent to a stream that was just created until it has
// settled (seen when clients create one stream at once). Each store asks
// once per stream.
func (s *Store) awaitDirect(ctx context.Context, st js.Stream) error {
	for {
		probe, cancel := context.WithTimeout(ctx, directProbe)
		_, err := st.GetLastMsgForSubject(probe, s.names.prefix+".probe")
		cancel()
		if err == nil || errors.Is(err, js.ErrMsgNotFound) {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
	}
}

func (s *Store) remember(r *streamRef) *streamRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.streams[r.name]; old != nil {
		return old
	}
	s.streams[r.name] = r
	return r
}

// streamNamed returns the store's history stream called name, which another node
// or an earlier run may have made; nil when it does not exist.
func (s *Store) streamNamed(name string) (*streamRef, error) {
	if r := s.knownStream(name); r != nil {
		return r, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	st, err := s.js.Stream(ctx, name)
	if errors.Is(err, js.ErrStreamNotFound) {
		return nil, nil
	}
	if err == nil {
		err = s.awaitDirect(ctx, st)
	}
	if err != nil {
		return nil, wrap("stream "+name, err)
	}
	subjects := st.CachedInfo().Config.Subjects
	if len(subjects) != 1 || !strings.HasSuffix(subjects[0], ".*") || !s.names.isHistory(name) {
		return nil, fmt.Errorf("jetstream: stream %s has subjects %q, not one of this store's history streams", name, subjects)
	}
	cfg := st.CachedInfo().Config
	cp, err := s.createStream(s.singleConfig(copies(name), "", s.cfg.MetaTTL, name))
	if err != nil {
		return nil, err
	}
	return s.remember(&streamRef{name: name, base: strings.TrimSuffix(cfg.Subjects[0], "*"), s: st, copies: cp}), nil
}

// historyStreams lists every history stream of the store's prefix, as the
// server has them now.
func (s *Store) historyStreams() ([]*streamRef, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	lister := s.js.StreamNames(ctx, js.WithStreamListSubject(s.names.filter()))
	var out []*streamRef
	for name := range lister.Name() {
		if !s.names.isHistory(name) {
			continue
		}
		r, err := s.streamNamed(name)
		if err != nil {
			return nil, err
		}
		if r != nil {
			out = append(out, r)
		}
	}
	if err := lister.Err(); err != nil {
		return nil, wrap("list streams", err)
	}
	return out, nil
}
