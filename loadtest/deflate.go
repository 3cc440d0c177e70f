package loadtest

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gobwas/httphead"
	"github.com/klauspost/compress/flate"
)

// The client side of permessage-deflate (RFC 7692). The tool never
// compresses what it sends (its commands are few and small), so only the
// server's compression matters: reading compressed frames, and what the
// server's answer asks of the inflater.

// deflateName is the extension's token.
const deflateName = "permessage-deflate"

// deflateOffer is what a connection offers with Config.Compression: what
// browsers send. Gyre and Centrifugo both accept it, answering
// "permessage-deflate; server_no_context_takeover;
// client_no_context_takeover". client_max_window_bits without a value
// lets the server ask for a smaller client window, which costs a client
// that compresses nothing nothing to grant; the server's own window and
// context are left to it.
var deflateOffer = []httphead.Option{{
	Name:       []byte(deflateName),
	Parameters: offerParams(),
}}

func offerParams() httphead.Parameters {
	var p httphead.Parameters
	p.Set([]byte("client_max_window_bits"), nil)
	return p
}

// errExtensionAnswer wraps every refusal of the server's extensions
// answer.
var errExtensionAnswer = errors.New("loadtest: the server's Sec-WebSocket-Extensions answer cannot be honoured")

// maxWindowBits is the largest LZ77 window deflate has, 32 KiB.
const maxWindowBits = 15

// acceptAnswer reads the extensions the server accepted (gobwas/ws has
// already refused any the client did not offer, and a header that does
// not parse) as RFC 7692 has a client do (sections 5 and 7.1): the
// connection fails on an answer it cannot honour, and nil means the server
// declined compression. Every valid answer to the offer can be honoured:
// this client never compresses, so the client_* parameters cost it
// nothing, and the inflater reads any window up to 32 KiB.
func acceptAnswer(accepted []httphead.Option) (*inflateState, error) {
	if len(accepted) == 0 {
		return nil, nil
	}
	if len(accepted) > 1 {
		return nil, fmt.Errorf("%w: permessage-deflate accepted %d times", errExtensionAnswer, len(accepted))
	}
	z := &inflateState{takeover: true, windowSize: 1 << maxWindowBits, limit: maxMessage}
	var seen map[string]bool
	var err error
	accepted[0].Parameters.ForEach(func(key, val []byte) bool {
		name := string(key)
		if seen[name] {
			err = fmt.Errorf("%w: permessage-deflate %s twice", errExtensionAnswer, name)
			return false
		}
		if seen == nil {
			seen = make(map[string]bool, 4)
		}
		seen[name] = true
		err = z.param(name, val)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !z.takeover {
		z.shared = &processInflated
	}
	return z, nil
}

// param applies one parameter of the server's answer.
func (z *inflateState) param(name string, val []byte) error {
	switch name {
	case "server_no_context_takeover":
		if len(val) > 0 {
			return fmt.Errorf("%w: permessage-deflate %s=%q: it takes no value", errExtensionAnswer, name, val)
		}
		z.takeover = false
	case "client_no_context_takeover":
		// Honoured: the client compresses nothing.
		if len(val) > 0 {
			return fmt.Errorf("%w: permessage-deflate %s=%q: it takes no value", errExtensionAnswer, name, val)
		}
	case "server_max_window_bits":
		bits, ok := windowBits(val)
		if !ok {
			return fmt.Errorf("%w: permessage-deflate %s=%q: want 8 to 15", errExtensionAnswer, name, val)
		}
		z.windowSize = 1 << bits
	case "client_max_window_bits":
		// Allowed because the offer has it; in an answer it needs a value.
		if _, ok := windowBits(val); !ok {
			return fmt.Errorf("%w: permessage-deflate %s=%q: want 8 to 15", errExtensionAnswer, name, val)
		}
	default:
		return fmt.Errorf("%w: permessage-deflate parameter %q is unknown", errExtensionAnswer, name)
	}
	return nil
}

func windowBits(val []byte) (int, bool) {
	if len(val) == 0 || len(val) > 2 {
		return 0, false
	}
	n, err := strconv.Atoi(string(val))
	return n, err == nil && n >= 8 && n <= maxWindowBits
}

// inflateState is a connection's half of a negotiated permessage-deflate.
// Without context takeover each compressed message stands alone, so the
// connection needs nothing between messages and takes an inflater from a
// pool for each. With it, the server's messages refer back into what it
// sent before: the connection keeps the last window of its compressed
// messages' content (allocated at the first) and starts each message's
// inflater from it.
type inflateState struct {
	takeover   bool // the server did not promise server_no_context_takeover
	windowSize int  // 2^server_max_window_bits
	window     []byte
	// limit bounds a message's content, so that a few compressed bytes
	// cannot make the tool allocate gigabytes.
	limit int
	// shared, without context takeover, holds the content of messages
	// other connections inflated.
	shared *inflatedCache
}

// messageTail ends every compressed message for the inflater: the empty
// stored block that the server stripped (RFC 7692 section 7.2.2), then a
// final empty stored block, so that the inflater ends with io.EOF where
// the message ends instead of waiting for more.
var messageTail = []byte{0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff}

// inflater is a pooled deflate reader with its source.
type inflater struct {
	src   bytes.Reader // a flate.Reader (io.ByteReader): no bufio in between
	fr    io.Reader
	reset flate.Resetter
}

var inflaters = sync.Pool{New: func() any {
	f := &inflater{}
	rc := flate.NewReader(&f.src)
	f.fr, f.reset = rc, rc.(flate.Resetter)
	return f
}}

// inflate returns the content of the compressed message in *in, in a
// pooled buffer. *in is the caller's; the tail is appended to it.
func (z *inflateState) inflate(in *[]byte) (*[]byte, error) {
	var slot *atomic.Pointer[inflatedMessage]
	var hash uint64
	if z.shared != nil {
		var content []byte
		if content, slot, hash = z.shared.lookup(*in); content != nil && len(content) <= z.limit {
			out := bufPool.Get().(*[]byte)
			*out = append((*out)[:0], content...)
			return out, nil
		}
	}
	compressed := len(*in)
	*in = append(*in, messageTail...)
	f := inflaters.Get().(*inflater)
	f.src.Reset(*in)
	// Reset does not fail; it copies the window, which may change after.
	_ = f.reset.Reset(&f.src, z.window)
	out := bufPool.Get().(*[]byte)
	b := (*out)[:0]
	var err error
	// One byte past the limit tells a message that is too large from
	// one that just fits.
	for err == nil && len(b) <= z.limit {
		if len(b) == cap(b) {
			nb := grow(b, min(2*cap(b)+4096, z.limit+1))
			b = nb[:len(b)]
		}
		var n int
		n, err = f.fr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
	}
	f.src.Reset(nil)
	inflaters.Put(f)
	*out = b
	switch {
	case len(b) > z.limit:
		putBuf(out)
		return nil, fmt.Errorf("loadtest: message inflates past %d bytes", z.limit)
	case err != io.EOF:
		putBuf(out)
		return nil, fmt.Errorf("loadtest: inflate: %w", err)
	}
	if z.takeover {
		z.remember(b)
	}
	if slot != nil {
		slot.Store(&inflatedMessage{hash: hash, compressed: bytes.Clone((*in)[:compressed]), content: bytes.Clone(b)})
	}
	return out, nil
}

// inflatedCache keeps the content of the latest compressed messages for
// every connection of the process. A server that compresses without
// context takeover sends each subscriber of a publication the same
// compressed bytes: inflating them once per process instead of once per
// connection keeps the tool's cost per delivery near what it is without
// compression (inflating a 1 KB message costs several microseconds),
// so that the tool still outpaces the server it measures. Every
// connection still reads its own bytes, which must equal the cached ones
// exactly, so what it handles is what inflating them would give.
type inflatedCache struct {
	slots [256]atomic.Pointer[inflatedMessage]
}

// inflatedMessage is a cache entry; never changed once stored.
type inflatedMessage struct {
	hash                uint64
	compressed, content []byte
}

var (
	processInflated inflatedCache
	cacheSeed       = maphash.MakeSeed()
)

// lookup returns the content of compressed when it is in the cache, and
// else where to store it.
func (c *inflatedCache) lookup(compressed []byte) ([]byte, *atomic.Pointer[inflatedMessage], uint64) {
	h := maphash.Bytes(cacheSeed, compressed)
	slot := &c.slots[h%uint64(len(c.slots))]
	if e := slot.Load(); e != nil && e.hash == h && bytes.Equal(e.compressed, compressed) {
		return e.content, slot, h
	}
	return nil, slot, h
}

// remember keeps the last windowSize bytes of the content so far.
func (z *inflateState) remember(msg []byte) {
	if z.window == nil {
		z.window = make([]byte, 0, z.windowSize)
	}
	if len(msg) >= z.windowSize {
		z.window = append(z.window[:0], msg[len(msg)-z.windowSize:]...)
		return
	}
	if keep := z.windowSize - len(msg); len(z.window) > keep {
		z.window = append(z.window[:0], z.window[len(z.window)-keep:]...)
	}
	z.window = append(z.window, msg...)
}
