package protocol

// The helpers below decode the compound shapes of the protocol (nested messages,
// repeated fields, maps) on top of jsonReader, given the decoder of the element type.
// A repeated key replaces the earlier value, as it does for scalar fields.

// readMessage decodes an object into a new message; null leaves the field unset.
func readMessage[T any](r *jsonReader, decode func(*jsonReader, *T)) *T {
	if !r.beginObject() {
		return nil
	}
	m := new(T)
	decode(r, m)
	return m
}

// readMessages decodes an array of objects. A null element is an error: a repeated
// message field cannot hold a missing message.
func readMessages[T any](r *jsonReader, decode func(*jsonReader, *T)) (dst []*T) {
	if !r.beginArray() {
		return nil
	}
	for first := true; r.elem(&first); {
		if r.peek() != '{' {
			r.fail("expected object")
			return dst
		}
		dst = append(dst, readMessage(r, decode))
	}
	return dst
}

func readStrings(r *jsonReader) (dst []string) {
	if !r.beginArray() {
		return nil
	}
	for first := true; r.elem(&first); {
		if r.peek() != '"' {
			r.fail("expected string")
			return dst
		}
		dst = append(dst, r.str())
	}
	return dst
}

func readStringMap(r *jsonReader) (dst map[string]string) {
	if !r.beginObject() {
		return nil
	}
	for first := true; r.field(&first); {
		k := string(r.key)
		v := r.str()
		if dst == nil {
			dst = make(map[string]string)
		}
		dst[k] = v
	}
	return dst
}

// readMessageMap decodes an object of messages; a null value stands for an empty
// message, since protobuf maps cannot hold a missing one.
func readMessageMap[T any](r *jsonReader, decode func(*jsonReader, *T)) (dst map[string]*T) {
	if !r.beginObject() {
		return nil
	}
	for first := true; r.field(&first); {
		k := string(r.key)
		v := readMessage(r, decode)
		if v == nil {
			v = new(T)
		}
		if dst == nil {
			dst = make(map[string]*T)
		}
		dst[k] = v
	}
	return dst
}
