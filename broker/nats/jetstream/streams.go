package jetstream

import (
	"errors"
	"fmt"
	"strings"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
)

// streamRef is one of the store's streams: its handle and the subject
// prefix of its channels.
type streamRef struct {
	name string
	base string // ends in '.'; a channel's subject is base + token
	s    js.Stream
}

func (r *streamRef) subject(channel string) string { return r.base + token(channel) }

// historyStream returns the stream of (size, ttl), creating it on first
// use. A stream that exists already (made by another node, or before a
// restart) is taken as it is.
func (s *Store) historyStream(size int, ttl time.Duration) (*streamRef, error) {
	name, base := s.names.history(size, ttl)
	if r := s.knownStream(name); r != nil {
		return r, nil
	}
	dup := min(s.cfg.DuplicateWindow, ttl)
	return s.ensureStream(js.StreamConfig{
		Name:              name,
		Subjects:          []string{base + "*"},
		Storage:           js.FileStorage,
		Retention:         js.LimitsPolicy,
		Discard:           js.DiscardOld,
		MaxMsgsPerSubject: int64(size),
		MaxAge:            ttl,
		Duplicates:        dup,
		Replicas:          s.cfg.Replicas,
		AllowDirect:       true,
	}, base)
}

// metaStream returns the stream of epoch records (one message per channel).
func (s *Store) metaStream() (*streamRef, error) {
	s.mu.Lock()
	r := s.meta
	s.mu.Unlock()
	if r != nil {
		return r, nil
	}
	name, base := s.names.meta()
	r, err := s.ensureStream(js.StreamConfig{
		Name:              name,
		Subjects:          []string{base + "*"},
		Storage:           js.FileStorage,
		Retention:         js.LimitsPolicy,
		Discard:           js.DiscardOld,
		MaxMsgsPerSubject: 1,
		MaxAge:            s.cfg.MetaTTL,
		Duplicates:        min(time.Minute, s.cfg.MetaTTL),
		Replicas:          s.cfg.Replicas,
		AllowDirect:       true,
	}, base)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.meta = r
	s.mu.Unlock()
	return r, nil
}

func (s *Store) knownStream(name string) *streamRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[name]
}

func (s *Store) ensureStream(cfg js.StreamConfig, base string) (*streamRef, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	st, err := s.js.CreateStream(ctx, cfg)
	if errors.Is(err, js.ErrStreamNameAlreadyInUse) {
		// Same name, other settings (replicas, duplicate window changed
		// since it was made): the limits that matter are in the name.
		st, err = s.js.Stream(ctx, cfg.Name)
	}
	if err != nil {
		return nil, wrap("create stream "+cfg.Name, err)
	}
	return s.remember(&streamRef{name: cfg.Name, base: base, s: st}), nil
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

// streamNamed returns the store's stream called name, which another node
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
	if err != nil {
		return nil, wrap("stream "+name, err)
	}
	subjects := st.CachedInfo().Config.Subjects
	if len(subjects) != 1 || !strings.HasSuffix(subjects[0], ".*") {
		return nil, fmt.Errorf("jetstream: stream %s has subjects %q, not one of this store's", name, subjects)
	}
	return s.remember(&streamRef{name: name, base: strings.TrimSuffix(subjects[0], "*"), s: st}), nil
}

// historyStreams lists every history stream of the store's prefix, as the
// server has them now.
func (s *Store) historyStreams() ([]*streamRef, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	lister := s.js.StreamNames(ctx, js.WithStreamListSubject(s.names.filter()))
	metaName, _ := s.names.meta()
	var out []*streamRef
	for name := range lister.Name() {
		if name == metaName || !strings.HasPrefix(name, s.names.stream+"_S") {
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
