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
	quick := 0
	for _, s := range publishJSONSeeds {
		if checkPublishJSON(t, []byte(s)) {
			quick++
		}
	}
	if quick < 5 {
		t.Errorf("%d seeds read quickly, want the usual shapes to be", quick)
	}
}

func FuzzReadPublishJSON(f *testing.F) {
	fuzzValidJSON(f, publishJSONSeeds, func(t *testing.T, b []byte) { checkPublishJSON(t, b) })
}

// checkPublishJSON reports whether b was read quickly, failing the test
// if it was read otherwise than by encoding/json.
func checkPublishJSON(t *testing.T, b []byte) bool {
	t.Helper()
	var got PublishRequest
	if !readPublishJSON(b, &got) {
		return false
	}
	var want PublishRequest
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
	quick := 0
	for _, s := range broadcastJSONSeeds {
		if checkBroadcastJSON(t, []byte(s)) {
			quick++
		}
	}
	if quick < 4 {
		t.Errorf("%d seeds read quickly, want the usual shapes to be", quick)
	}
}

// FuzzReadBroadcastJSON: readBroadcastJSON reads any valid JSON it takes
// as encoding/json reads it.
func FuzzReadBroadcastJSON(f *testing.F) {
	fuzzValidJSON(f, broadcastJSONSeeds, func(t *testing.T, b []byte) { checkBroadcastJSON(t, b) })
}

// checkBroadcastJSON reports whether b was read quickly, failing the test
// if it was read otherwise than by encoding/json.
func checkBroadcastJSON(t *testing.T, b []byte) bool {
	t.Helper()
	var got BroadcastRequest
	if !readBroadcastJSON(b, &got) {
		return false
	}
	var want BroadcastRequest
	if err := decode(b, &want); err != nil {
		t.Fatalf("%s: read quickly, but encoding/json refuses it: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: read as %+v, encoding/json reads %+v", b, got, want)
	}
	return true
}
