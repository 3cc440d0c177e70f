package fossil

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// item is one record of the JSON documents the tests publish: the shape of a typical
// real-time payload (a list of quotes, scores, positions) whose values change a few at
// a time.
type item struct {
	ID     int      `json:"id"`
	Name   string   `json:"name"`
	Price  float64  `json:"price"`
	Volume int      `json:"volume"`
	Tags   []string `json:"tags"`
	Note   string   `json:"note,omitempty"`
}

var words = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa"}

// jsonItems makes records that marshal to at least size bytes.
func jsonItems(rng *rand.Rand, size int) []item {
	var items []item
	for n := 2; n < size; {
		it := item{
			ID:     len(items) + 1,
			Name:   words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))],
			Price:  float64(rng.IntN(1000000)) / 100,
			Volume: rng.IntN(1 << 20),
			Tags:   []string{words[rng.IntN(len(words))], words[rng.IntN(len(words))]},
		}
		items = append(items, it)
		n += len(mustJSON(it)) + 1
	}
	return items
}

// editItems changes the price or volume of edits random records, as a ticker would.
func editItems(rng *rand.Rand, items []item, edits int) []item {
	out := append([]item(nil), items...)
	for range edits {
		i := rng.IntN(len(out))
		if rng.IntN(2) == 0 {
			out[i].Price = float64(rng.IntN(1000000)) / 100
		} else {
			out[i].Volume = rng.IntN(1 << 20)
		}
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal test document: %v", err))
	}
	return b
}

// similarJSON returns a document of about size bytes and a copy with a few values changed.
func similarJSON(seed uint64, size, edits int) (source, target []byte) {
	rng := rand.New(rand.NewPCG(seed, 1))
	items := jsonItems(rng, size)
	return mustJSON(items), mustJSON(editItems(rng, items, edits))
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// mutate copies b with edits random changes: a byte replaced, a run inserted or a run
// deleted.
func mutate(rng *rand.Rand, b []byte, edits int) []byte {
	out := append([]byte(nil), b...)
	for range edits {
		if len(out) == 0 {
			out = append(out, randomBytes(rng, 1+rng.IntN(8))...)
			continue
		}
		i := rng.IntN(len(out))
		switch rng.IntN(3) {
		case 0:
			out[i] = byte(rng.Uint32())
		case 1:
			ins := randomBytes(rng, 1+rng.IntN(32))
			out = append(out[:i], append(ins, out[i:]...)...)
		default:
			out = append(out[:i], out[min(i+1+rng.IntN(32), len(out)):]...)
		}
	}
	return out
}

// unicodeText is valid UTF-8 made of one- to four-byte characters, so that edits and
// copies meet character boundaries of every width.
func unicodeText(rng *rand.Rand, runes int) string {
	alphabet := []rune("aé€𝄞 z,ß中文ключ{}\"😀")
	var sb strings.Builder
	for range runes {
		sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
	}
	return sb.String()
}

// editText replaces edits random characters of s, keeping it valid UTF-8.
func editText(rng *rand.Rand, s string, edits int) string {
	rs := []rune(s)
	repl := []rune(unicodeText(rng, edits))
	for _, r := range repl {
		rs[rng.IntN(len(rs))] = r
	}
	return string(rs)
}
