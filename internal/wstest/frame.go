package wstest

import (
	"bytes"

	"github.com/gobwas/ws"
)

// MaskedFrame builds a client frame by hand, for tests of what a server
// does with frames a well-behaved client never sends: b0 is the first
// header byte (fin, reserved bits and opcode, as on the wire), and the
// payload is masked with a fresh key.
func MaskedFrame(b0 byte, payload []byte) []byte {
	h := ws.Header{
		Fin:    b0&0x80 != 0,
		Rsv:    (b0 >> 4) & 0x7,
		OpCode: ws.OpCode(b0 & 0x0f),
		Masked: true,
		Mask:   ws.NewMask(),
		Length: int64(len(payload)),
	}
	var b bytes.Buffer
	_ = ws.WriteHeader(&b, h)
	p := append([]byte(nil), payload...)
	ws.Cipher(p, h.Mask, 0)
	return append(b.Bytes(), p...)
}
