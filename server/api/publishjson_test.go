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
