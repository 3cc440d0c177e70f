package protocol

import "testing"

// Allocation budgets of the broadcast path: encoding a publication into a reused buffer
// must not allocate, whatever the format.
func TestAppendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations")
	}
	for _, typ := range types {
		for name, push := range map[string]func() *Push{"stream": benchPush, "map": benchMapPush} {
			t.Run(typ.String()+"/"+name, func(t *testing.T) { wantAppendAllocs(t, typ, &Reply{Push: push()}) })
		}
	}
}

func wantAppendAllocs(t *testing.T, typ Type, reply *Reply) {
	t.Helper()
	buf := make([]byte, 0, 1024)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = AppendReply(buf[:0], typ, reply); err != nil {
			t.Fatal(err)
		}
		if buf, err = AppendPush(buf[:0], typ, reply.Push); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per encode, want 0", allocs)
	}
}

func TestDecodeCommandsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations")
	}
	// A pong allocates the Command and nothing else: the decoder itself is pooled.
	for typ, frame := range map[Type][]byte{TypeJSON: []byte("{}"), TypeProtobuf: {0}} {
		t.Run(typ.String(), func(t *testing.T) {
			cmds := make([]*Command, 0, 1)
			allocs := testing.AllocsPerRun(100, func() {
				var err error
				if cmds, err = DecodeCommands(typ, frame, cmds[:0]); err != nil {
					t.Fatal(err)
				}
			})
			if allocs > 1 {
				t.Fatalf("%v allocations per pong, want 1", allocs)
			}
		})
	}
}
