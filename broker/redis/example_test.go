package redis_test

import (
	"fmt"
	"log"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis"
)

// An engine shared by a broker and a presence manager; several addresses
// would shard channels between them.
func Example() {
	e, err := redis.New(redis.Config{
		Addresses: []string{"127.0.0.1:6379"},
		Prefix:    "myapp",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	var (
		b  broker.Broker          = e.Broker()
		pm broker.PresenceManager = e.PresenceManager()
	)
	// Hand both to gyre.NewNode, which runs the broker with its handler.
	fmt.Println(b != nil, pm != nil)
}

// A MapBroker with connections of its own, for map channels kept in
// another Redis than the engine's (Engine.MapBroker shares an engine's).
func ExampleNewMapBroker() {
	m, err := redis.NewMapBroker(redis.Config{Addresses: []string{"127.0.0.1:6380"}, Prefix: "myapp"})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	var mb broker.MapBroker = m
	// Hand it to gyre.NewNode as Config.MapBroker, which runs it.
	fmt.Println(mb != nil)
}
