package unigrpc_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/unigrpc"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
)

// BenchmarkConsume publishes b.N publications of 100 bytes into a channel
// with n consumers over real gRPC connections on loopback and waits until
// every consumer has read them all: the cost of a push through uni_grpc,
// client side included (both run in this process).
func BenchmarkConsume(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(strconv.Itoa(n)+"consumers", func(b *testing.B) {
			benchConsume(b, n)
		})
	}
}

func benchConsume(b *testing.B, n int) {
	s := startServer(b, gyre.Config{QueueMaxSize: 64 << 20}, unigrpc.Config{}, nil)
	client := dial(b, s.addr)
	tok := connToken(b, "bench", map[string]any{"channels": []string{"bench"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done sync.WaitGroup
	start := make(chan int)
	for range n {
		stream, err := client.Consume(ctx, &unistreampb.ConnectRequest{Token: tok})
		if err != nil {
			b.Fatal(err)
		}
		if p, err := stream.Recv(); err != nil || p.Connect == nil {
			b.Fatalf("first push %v, %v", p, err)
		}
		done.Go(func() {
			want := <-start
			for got := 0; got < want; {
				p, err := stream.Recv()
				if err != nil {
					b.Error(err)
					return
				}
				if p.Pub != nil {
					got++
				}
			}
		})
	}
	data := []byte(`"` + strings.Repeat("x", 98) + `"`)
	b.ReportAllocs()
	b.ResetTimer()
	for range n {
		start <- b.N
	}
	for range b.N {
		if _, err := s.node.Publish("bench", data); err != nil {
			b.Fatal(err)
		}
	}
	done.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "pushes/s")
}
