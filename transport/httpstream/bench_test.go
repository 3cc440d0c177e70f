package httpstream_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gyrehq/gyre/transport/httpstream"
)

// BenchmarkWriteFrame writes a two-message frame per iteration to a real
// client that reads everything.
func BenchmarkWriteFrame(b *testing.B) {
	frame := []byte(`{"push":{"channel":"news","pub":{"data":{"text":"hello"},"offset":42}}}` + "\n" +
		`{"push":{"channel":"news","pub":{"data":{"text":"world"},"offset":43}}}`)
	for _, f := range []struct {
		name   string
		format httpstream.Format
	}{{"lines", httpstream.Lines}, {"sse", httpstream.SSE}} {
		b.Run(f.name, func(b *testing.B) {
			start := make(chan *httpstream.Stream)
			done := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s, err := httpstream.Start(w, r, f.format, httpstream.Options{})
				if err != nil {
					b.Error(err)
					close(start)
					return
				}
				start <- s
				<-done
			}))
			defer srv.Close()
			go func() {
				resp, err := http.Get(srv.URL)
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				_, _ = io.Copy(io.Discard, resp.Body)
			}()
			s := <-start
			if s == nil {
				return
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if err := s.WriteFrame(frame); err != nil {
					b.Fatal(err)
				}
			}
			s.Finish(nil)
			close(done)
		})
	}
}
