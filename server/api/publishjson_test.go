package api

import (
	"reflect"
	"testing"
)

var publishJSONSeeds = []string{
	`{"channel":"news","data":{"text":"hi \"there\"","n":[1,2]}}`,
	`{"channel":"a","b64data":"aGk=","skip_history":true,"delta":false,"idempotency_key":"k","version":18446744073709551615,"version_epoch":"e","tags":{"t":"v","t":"w"}}`,
	` { "data" : 1 , "channel" : "a" } `,
	`{"channel":"é","data":"x"}`,
	`{"Channel":"a","data":1}`,
	`{"channel":"a","channel":"b","data":1}`,
	`{"channel":"a\n","data":1}`,
	`{"channel":null,"data":null}`,
	`{"channel":"a","version":18446744073709551616}`,
	`{"channel":"a","version":-1}`,
	`{"channel":"a","version":1.5}`,
	`{"channel":"a","version":1e3}`,
	`{"channel":"a","tags":{"k":1}}`,
	`{"channel":"a","tags":{"k\u0065":"\u0076"}}`,
	`{"channel":"a","tags":{}}`,
	`{"channel":"a","other":[1]}`,
	`{"chann\u0065l":"a"}`,
	`{"channel":1}`,
	`[]`,
	`{}`,
}

// TestReadPublishJSON: what readPublishJSON reads, it reads as
// encoding/json does.
func TestReadPublishJSON(t *testing.T) {
	checkQuickSeeds(t, publishJSONSeeds, 5, readPublishJSON)
}

func FuzzReadPublishJSON(f *testing.F) {
	fuzzValidJSON(f, publishJSONSeeds, func(t *testing.T, b []byte) { checkQuickJSON(t, b, readPublishJSON) })
}

// checkQuickSeeds checks each seed with checkQuickJSON and that at least
// atLeast of them were read quickly.
func checkQuickSeeds[R any](t *testing.T, seeds []string, atLeast int, read func([]byte, *R) bool) {
	t.Helper()
	quick := 0
	for _, s := range seeds {
		if checkQuickJSON(t, []byte(s), read) {
			quick++
		}
	}
	if quick < atLeast {
		t.Errorf("%d seeds read quickly, want the usual shapes to be", quick)
	}
}

// checkQuickJSON reports whether read read b quickly, failing the test if
// it read it otherwise than encoding/json does.
func checkQuickJSON[R any](t *testing.T, b []byte, read func([]byte, *R) bool) bool {
	t.Helper()
	var got R
	if !read(b, &got) {
		return false
	}
	var want R
	if err := decode(b, &want); err != nil {
		t.Fatalf("%s: read quickly, but encoding/json refuses it: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: read as %+v, encoding/json reads %+v", b, got, want)
	}
	return true
}

var broadcastJSONSeeds = []string{
	`{"channels":["a","b","c"],"data":{"text":"hi"}}`,
	`{"channels":[],"data":1}`,
	`{"channels":["a"],"b64data":"aGk=","skip_history":true,"tags":{"t":"v"},"idempotency_key":"k"}`,
	` { "data" : [1] , "channels" : [ "a" , "é" ] } `,
	`{"channels":["a","a"],"data":1}`,
	`{"channels":["a\u0062"],"data":1}`,
	`{"channels":["a",1],"data":1}`,
	`{"channels":["a",null],"data":1}`,
	`{"channels":"a","data":1}`,
	`{"channels":null,"data":1}`,
	`{"channel":"a","channels":["b"],"data":1}`,
	`{"Channels":["a"],"data":1}`,
	`{"channels":["a"],"channels":["b"]}`,
	`{"channels":[[]]}`,
}

// TestReadBroadcastJSON: what readBroadcastJSON reads, it reads as
// encoding/json does.
func TestReadBroadcastJSON(t *testing.T) {
	checkQuickSeeds(t, broadcastJSONSeeds, 4, readBroadcastJSON)
}

// FuzzReadBroadcastJSON: readBroadcastJSON reads any valid JSON it takes
// as encoding/json reads it.
func FuzzReadBroadcastJSON(f *testing.F) {
	fuzzValidJSON(f, broadcastJSONSeeds, func(t *testing.T, b []byte) { checkQuickJSON(t, b, readBroadcastJSON) })
}
