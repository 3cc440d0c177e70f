package websocket

import (
	"errors"
	"strings"
	"testing"
)

func TestErrorStrings(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "close with reason", err: &CloseError{Code: 3501, Reason: "bad request"}, want: "websocket: closed by peer: 3501 bad request"},
		{name: "close without reason", err: &CloseError{Code: 1005}, want: "websocket: closed by peer: 1005"},
		{name: "protocol", err: protocolError("unmasked client frame"), want: "websocket: protocol error: unmasked client frame"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
	for _, err := range []error{ErrMessageTooLarge, ErrProtocol, ErrInvalidUTF8, ErrClosed, ErrOriginNotAllowed, ErrBadHandshake} {
		if !strings.HasPrefix(err.Error(), "websocket: ") {
			t.Errorf("%q lacks the package prefix", err)
		}
	}
	if !errors.Is(protocolError("x"), ErrProtocol) {
		t.Error("protocolError does not match ErrProtocol")
	}
}
