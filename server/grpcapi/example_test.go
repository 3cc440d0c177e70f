package grpcapi_test

import (
	"context"
	"fmt"
	"log"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/gyrehq/gyre/server/grpcapi/apipb"
)

// A backend publishes through the gRPC API of a server with
// grpc_api.enabled and grpc_api.key GRPC_KEY. A method's error comes in
// the response; an error of the call means it did not run.
func Example_client() {
	conn, err := grpc.NewClient("localhost:10000", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	api := apipb.NewCentrifugoApiClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "apikey GRPC_KEY")
	resp, err := api.Publish(ctx, &apipb.PublishRequest{Channel: "chat:index", Data: []byte(`{"text":"hello"}`)})
	if err != nil {
		log.Fatal(err) // the call did not run: key, size, connection
	}
	if e := resp.GetError(); e != nil {
		log.Fatalf("publish: %d %s", e.GetCode(), e.GetMessage())
	}
	fmt.Println(resp.GetResult().GetOffset(), resp.GetResult().GetEpoch())
}
