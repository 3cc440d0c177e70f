package fossil

import (
	"fmt"
	"math"
)

// Apply rebuilds the target from source and delta. It checks that every command fits
// the source and the announced length and that the result has the delta's checksum;
// any failure is an error wrapping [ErrCorrupt].
func Apply(source, delta []byte) ([]byte, error) {
	r := reader{buf: delta}
	size, err := r.length()
	if err != nil {
		return nil, fmt.Errorf("%w: target length: %w", ErrCorrupt, err)
	}
	if err := r.expect('\n'); err != nil {
		return nil, fmt.Errorf("%w: target length: %w", ErrCorrupt, err)
	}
	if size > maxTarget(len(source), len(delta)) {
		return nil, fmt.Errorf("%w: target length %d is more than the delta can build", ErrCorrupt, size)
	}
	// A target is rarely longer than source and delta together; past that, the bytes
	// must be built before memory is spent on them.
	out := make([]byte, 0, min(size, len(source)+len(delta)))
	for {
		n, err := r.number()
		if err != nil {
			return nil, fmt.Errorf("%w: command at byte %d: %w", ErrCorrupt, r.pos, err)
		}
		op, err := r.byte()
		if err != nil {
			return nil, fmt.Errorf("%w: command at byte %d: %w", ErrCorrupt, r.pos, err)
		}
		switch op {
		case '@':
			out, err = applyCopy(&r, out, source, n, size)
		case ':':
			out, err = applyInsert(&r, out, n, size)
		case ';':
			return finish(&r, out, n, size)
		default:
			return nil, fmt.Errorf("%w: unknown command %q at byte %d", ErrCorrupt, op, r.pos-1)
		}
		if err != nil {
			return nil, err
		}
	}
}

// maxTarget bounds the target a delta can build, so that a forged length cannot make
// Apply allocate more than the commands could fill: inserts yield no more bytes than the
// delta holds, and each copy takes at least four bytes ("1@0,") and yields at most the
// whole source.
func maxTarget(sourceLen, deltaLen int) int {
	commands := uint64(deltaLen / 4)
	bound := commands*uint64(sourceLen) + uint64(deltaLen)
	if commands != 0 && bound/commands < uint64(sourceLen) { // overflow
		return math.MaxInt
	}
	return int(min(bound, maxNumber, math.MaxInt))
}

func applyCopy(r *reader, out, source []byte, n uint64, size int) ([]byte, error) {
	off, err := r.length()
	if err != nil {
		return nil, fmt.Errorf("%w: copy offset at byte %d: %w", ErrCorrupt, r.pos, err)
	}
	if err := r.expect(','); err != nil {
		return nil, fmt.Errorf("%w: copy: %w", ErrCorrupt, err)
	}
	if off > len(source) || n > uint64(len(source)-off) {
		return nil, fmt.Errorf("%w: copy of %d bytes at %d past the end of the %d-byte source", ErrCorrupt, n, off, len(source))
	}
	if n > uint64(size-len(out)) {
		return nil, fmt.Errorf("%w: copy past the announced target length %d", ErrCorrupt, size)
	}
	return append(out, source[off:off+int(n)]...), nil
}

func applyInsert(r *reader, out []byte, n uint64, size int) ([]byte, error) {
	if n > uint64(len(r.buf)-r.pos) {
		return nil, fmt.Errorf("%w: insert of %d bytes past the end of the delta", ErrCorrupt, n)
	}
	if n > uint64(size-len(out)) {
		return nil, fmt.Errorf("%w: insert past the announced target length %d", ErrCorrupt, size)
	}
	end := r.pos + int(n)
	out = append(out, r.buf[r.pos:end]...)
	r.pos = end
	return out, nil
}

// finish checks the trailer: the target is complete, matches the checksum sum, and
// nothing follows the semicolon.
func finish(r *reader, out []byte, sum uint64, size int) ([]byte, error) {
	if len(out) != size {
		return nil, fmt.Errorf("%w: built %d bytes, announced %d", ErrCorrupt, len(out), size)
	}
	if got := checksum(out); uint64(got) != sum {
		return nil, fmt.Errorf("%w: checksum %d, delta says %d", ErrCorrupt, got, sum)
	}
	if r.pos != len(r.buf) {
		return nil, fmt.Errorf("%w: %d bytes after the checksum", ErrCorrupt, len(r.buf)-r.pos)
	}
	return out, nil
}
