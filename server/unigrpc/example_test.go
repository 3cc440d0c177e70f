package unigrpc_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/server/unigrpc"
	"github.com/gyrehq/gyre/server/unigrpc/unistreampb"
	"github.com/gyrehq/gyre/token"
)

// A consumer reads the connect push and then the publications of its
// server-side channels, here those named by its connect token.
func Example() {
	node, err := gyre.NewNode(gyre.Config{Token: token.Config{HMACSecretKey: "secret"}})
	if err != nil {
		log.Fatal(err)
	}
	if err := node.Run(); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := unigrpc.New(node, unigrpc.Config{})
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = node.Shutdown(ctx)
		_ = srv.Shutdown(ctx)
	}()

	// The consumer: any gRPC client generated from unistream.proto.
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	tok, _ := token.SignHMAC("HS256", []byte("secret"), map[string]any{"sub": "ann", "channels": []string{"news"}})
	stream, err := unistreampb.NewCentrifugoUniStreamClient(cc).Consume(context.Background(),
		&unistreampb.ConnectRequest{Token: tok})
	if err != nil {
		log.Fatal(err)
	}
	push, err := stream.Recv()
	if err != nil {
		log.Fatal(err)
	}
	_, subscribed := push.Connect.Subs["news"]
	fmt.Println("connected, subscribed to news:", subscribed)

	if _, err := node.Publish("news", []byte(`{"text":"hello"}`)); err != nil {
		log.Fatal(err)
	}
	push, err = stream.Recv()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s\n", push.Channel, push.Pub.Data)
	// Output:
	// connected, subscribed to news: true
	// news: {"text":"hello"}
}
