package httpstream

// AppendEvent appends data as one Server-Sent Event: a "data:" field per
// line of data and an empty line. Lines may end in "\n", "\r\n" or "\r",
// the line ends SSE knows, so that an EventSource hands the listener data
// back with "\n" between its lines.
func AppendEvent(dst, data []byte) []byte {
	for {
		end, next := lineEnd(data)
		dst = append(dst, "data: "...)
		dst = append(dst, data[:end]...)
		dst = append(dst, '\n')
		if next < 0 {
			break
		}
		data = data[next:]
	}
	return append(dst, '\n')
}

// lineEnd finds the end of the first line of data and where the next line
// starts; next is -1 when the line is the last.
func lineEnd(data []byte) (end, next int) {
	for i, b := range data {
		switch b {
		case '\n':
			return i, i + 1
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				return i, i + 2
			}
			return i, i + 1
		}
	}
	return len(data), -1
}
