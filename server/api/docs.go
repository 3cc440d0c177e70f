package api

import (
	"bytes"
	"errors"
	"fmt"
)

// The method list of docs/api.md is written from the table:
// go generate ./server/api rewrites the lines between these markers.
const (
	docListBegin = "<!-- methods: written by go generate ./server/api from its method table; do not edit -->"
	docListEnd   = "<!-- end of methods -->"
)

// MethodList is the method list of docs/api.md, in Markdown: one row per
// method with its summary, its gRPC rpc and its number in the legacy form.
func MethodList() []byte {
	var b bytes.Buffer
	b.WriteString("| Method | | gRPC | Legacy number |\n| --- | --- | --- | --- |\n")
	for _, m := range methodTable {
		legacy := "–"
		if m.Legacy >= 0 {
			legacy = fmt.Sprint(m.Legacy)
		}
		// A heading "### name" has the anchor #name.
		fmt.Fprintf(&b, "| [%s](#%s) | %s | `%s` | %s |\n", m.Name, m.Name, m.Summary, m.GRPC, legacy)
	}
	return b.Bytes()
}

// WithMethodList returns doc, the text of docs/api.md, with its method
// list (between the markers) replaced by MethodList.
func WithMethodList(doc []byte) ([]byte, error) {
	begin := bytes.Index(doc, []byte(docListBegin))
	end := bytes.Index(doc, []byte(docListEnd))
	if begin < 0 || end < begin {
		return nil, errors.New("api: docs/api.md has no method list markers")
	}
	begin += len(docListBegin)
	var out bytes.Buffer
	out.Write(doc[:begin])
	out.WriteString("\n")
	out.Write(MethodList())
	out.Write(doc[end:])
	return out.Bytes(), nil
}
