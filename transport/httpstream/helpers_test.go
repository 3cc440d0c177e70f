package httpstream_test

import (
	"bufio"
	"strings"
	"testing"
)

// parseEvents reads a Server-Sent Events stream the way an EventSource does
// (data fields only), returning the data of each event.
func parseEvents(t testing.TB, stream string) []string {
	t.Helper()
	var events []string
	var data []string
	have := false
	sc := bufio.NewScanner(strings.NewReader(stream))
	sc.Split(scanSSELines)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if have {
				events = append(events, strings.Join(data, "\n"))
			}
			data, have = nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		if field == "data" {
			data = append(data, value)
			have = true
		}
	}
	return events
}

// scanSSELines splits at "\r\n", "\n" or "\r".
func scanSSELines(data []byte, atEOF bool) (int, []byte, error) {
	for i, b := range data {
		switch b {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			return 0, nil, nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
