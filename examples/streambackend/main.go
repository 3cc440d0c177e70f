// Command streambackend is an application backend for Gyre's subscription
// streams (docs/proxy.md, "Subscription streams"). It serves two methods of the gRPC
// service centrifugal.centrifugo.proxy.CentrifugoProxy, the one Gyre (and
// Centrifugo) call when a client subscribes to a channel of a namespace
// with subscribe_stream_proxy_enabled:
//
//   - SubscribeUnidirectional: a ticker. The client's subscribe data may
//     set {"interval_ms": 200, "count": 5}; after count ticks the stream
//     ends, which unsubscribes the client with code 2000.
//   - SubscribeBidirectional: an echo. Every publication of the client
//     into the channel comes back, numbered; publishing "bye" ends the
//     stream.
//
// Anonymous clients are refused with error 403, an application error code
// the client receives as the subscribe error.
//
// Any backend generated from Centrifugo's proxy.proto works the same way;
// this one uses the generated code in Gyre's server/proxy/proxypb.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"time"

	"google.golang.org/grpc"

	"github.com/gyrehq/gyre/server/proxy/proxypb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:12000", "address to listen on")
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("stream backend on %s", lis.Addr())
	log.Fatal(newServer().Serve(lis))
}

// newServer returns a gRPC server with the backend registered. Each
// subscription holds one gRPC stream, so the default limit of concurrent
// streams per connection (100 in grpc-go's server) is lifted.
func newServer() *grpc.Server {
	s := grpc.NewServer(grpc.MaxConcurrentStreams(math.MaxUint32))
	proxypb.RegisterCentrifugoProxyServer(s, &backend{})
	return s
}

// backend implements the two stream methods; the other methods of the
// service answer Unimplemented.
type backend struct {
	proxypb.UnimplementedCentrifugoProxyServer
}

// tickerOptions is what a client may ask for in its subscribe data.
type tickerOptions struct {
	IntervalMS int `json:"interval_ms"`
	Count      int `json:"count"`
}

// accepted is the first message of a stream that accepts the subscribe;
// data goes to the client in its subscribe result.
func accepted(data []byte) *proxypb.StreamSubscribeResponse {
	return &proxypb.StreamSubscribeResponse{SubscribeResponse: &proxypb.SubscribeResponse{
		Result: &proxypb.SubscribeResult{Data: data},
	}}
}

// refused is the first message of a stream that refuses the subscribe.
func refused(code uint32, message string) *proxypb.StreamSubscribeResponse {
	return &proxypb.StreamSubscribeResponse{SubscribeResponse: &proxypb.SubscribeResponse{
		Error: &proxypb.Error{Code: code, Message: message},
	}}
}

func publication(data []byte) *proxypb.StreamSubscribeResponse {
	return &proxypb.StreamSubscribeResponse{Publication: &proxypb.Publication{Data: data}}
}

func (b *backend) SubscribeUnidirectional(req *proxypb.SubscribeRequest, stream proxypb.CentrifugoProxy_SubscribeUnidirectionalServer) error {
	if req.User == "" {
		return stream.Send(refused(403, "log in first"))
	}
	opts := tickerOptions{IntervalMS: 1000}
	if len(req.Data) > 0 {
		if err := json.Unmarshal(req.Data, &opts); err != nil || opts.IntervalMS <= 0 || opts.Count < 0 {
			return stream.Send(refused(400, "bad ticker options"))
		}
	}
	if err := stream.Send(accepted([]byte(`{"ticking":true}`))); err != nil {
		return err
	}
	ticker := time.NewTicker(time.Duration(opts.IntervalMS) * time.Millisecond)
	defer ticker.Stop()
	for n := 1; opts.Count == 0 || n <= opts.Count; n++ {
		select {
		case <-stream.Context().Done():
			// The client unsubscribed or went away.
			return nil
		case t := <-ticker.C:
			data := fmt.Sprintf(`{"tick":%d,"time":%q}`, n, t.UTC().Format(time.RFC3339Nano))
			if err := stream.Send(publication([]byte(data))); err != nil {
				return err
			}
		}
	}
	// Returning nil ends the stream cleanly: the client is unsubscribed
	// with 2000. Returning an error would unsubscribe it with 2500, and
	// the client would subscribe again.
	return nil
}

func (b *backend) SubscribeBidirectional(stream proxypb.CentrifugoProxy_SubscribeBidirectionalServer) error {
	// The first request carries the subscribe.
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	req := first.GetSubscribeRequest()
	if req == nil {
		return fmt.Errorf("first request without subscribe_request")
	}
	if req.User == "" {
		return stream.Send(refused(403, "log in first"))
	}
	if err := stream.Send(accepted(nil)); err != nil {
		return err
	}
	// Every later request is a publication of the client; Recv fails
	// once the client unsubscribed or went away.
	for n := 1; ; n++ {
		in, err := stream.Recv()
		if err != nil {
			return err
		}
		data := in.GetPublication().GetData()
		if string(data) == `"bye"` {
			return nil
		}
		echo := fmt.Sprintf(`{"echo":%s,"n":%d,"user":%q}`, data, n, req.User)
		if err := stream.Send(publication([]byte(echo))); err != nil {
			return err
		}
	}
}
