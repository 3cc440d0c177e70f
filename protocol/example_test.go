package protocol_test

import (
	"fmt"

	"github.com/gyrehq/gyre/protocol"
)

func ExampleDecodeCommands() {
	frame := []byte("{\"id\":1,\"connect\":{\"name\":\"js\"}}\n{\"id\":2,\"subscribe\":{\"channel\":\"chat\"}}\n{}")
	cmds, err := protocol.DecodeCommands(protocol.TypeJSON, frame, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cmds {
		switch {
		case c.Connect != nil:
			fmt.Println(c.Id, "connect from", c.Connect.Name)
		case c.Subscribe != nil:
			fmt.Println(c.Id, "subscribe to", c.Subscribe.Channel)
		default:
			fmt.Println("pong")
		}
	}
	// Output:
	// 1 connect from js
	// 2 subscribe to chat
	// pong
}

func ExampleAppendReply() {
	push := &protocol.Reply{Push: &protocol.Push{Channel: "chat", Pub: &protocol.Publication{
		Data:   []byte(`{"text":"hi"}`), // raw JSON, not base64
		Offset: 7,
	}}}
	var msgs [][]byte
	for _, r := range []*protocol.Reply{{Id: 2, Subscribe: &protocol.SubscribeResult{}}, push, {}} {
		b, err := protocol.AppendReply(nil, protocol.TypeJSON, r)
		if err != nil {
			fmt.Println(err)
			return
		}
		msgs = append(msgs, b)
	}
	fmt.Println(string(protocol.JoinFrame(nil, protocol.TypeJSON, msgs)))
	// Output:
	// {"id":2,"subscribe":{}}
	// {"push":{"channel":"chat","pub":{"data":{"text":"hi"},"offset":7}}}
	// {}
}
