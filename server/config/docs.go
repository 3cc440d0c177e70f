package config

import (
	"fmt"
	"reflect"
	"strings"
)

// channelOptionsType is documented once, apart from the sections using it.
var channelOptionsType = reflect.TypeFor[ChannelOptions]()

// namespaceType is the item of channel.namespaces, whose options are
// documented in their own section.
var namespaceType = reflect.TypeFor[Namespace]()

// itemRows reports whether the items of a list of tables are documented
// key by key (path[].key) after the list's own row.
func itemRows(f field) bool { return f.kind == kindStructs && f.typ.Elem() != namespaceType }

// MarkdownReference renders the configuration reference (docs/config.md)
// from the struct tags, so that the documentation cannot drift from the code.
func MarkdownReference() []byte {
	var b strings.Builder
	b.WriteString(docIntro)
	root := reflect.TypeFor[Config]()
	b.WriteString("\n## Top level\n\n")
	writeTableHead(&b)
	for _, f := range fieldsOf(root) {
		if f.kind != kindStruct && f.kind != kindUnimplemented {
			writeRow(&b, f.key, f)
			if itemRows(f) {
				writeRows(&b, f.typ.Elem(), f.key+"[]")
			}
		}
	}
	for _, f := range fieldsOf(root) {
		if f.kind != kindStruct {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", f.key, f.help)
		writeTableHead(&b)
		writeRows(&b, f.typ, f.key)
	}
	b.WriteString("\n## Channel options\n\n")
	b.WriteString("Each of these keys may appear in `channel.without_namespace` and in every item of\n")
	b.WriteString("`channel.namespaces` (next to its `name`). From the environment:\n")
	b.WriteString("`GYRE_CHANNEL_WITHOUT_NAMESPACE_PRESENCE=true` or, for a namespace named `chat`,\n")
	b.WriteString("`GYRE_CHANNEL_NAMESPACES_CHAT_PRESENCE=true`.\n\n")
	writeTableHead(&b)
	writeRows(&b, reflect.TypeFor[Namespace](), "")
	b.WriteString(docUnimplementedIntro)
	b.WriteString("| Key | What it does in Centrifugo | What to do instead |\n| --- | --- | --- |\n")
	writeUnimplemented(&b, root, "")
	writeUnimplemented(&b, channelOptionsType, "channel.namespaces[].")
	b.WriteString(docStatusIntro)
	b.WriteString("| Key | Status in Gyre |\n| --- | --- |\n")
	writeStatus(&b, root, "")
	return []byte(b.String())
}

func writeTableHead(b *strings.Builder) {
	b.WriteString("| Key | Type | Default | Description |\n| --- | --- | --- | --- |\n")
}

// writeRows writes a row for every implemented key under the table type t.
func writeRows(b *strings.Builder, t reflect.Type, path string) {
	for _, f := range fieldsOf(t) {
		p := joinPath(path, f.key)
		switch {
		case f.kind == kindUnimplemented:
		case f.typ == channelOptionsType:
			writeRow(b, p, f)
		case f.kind == kindStruct:
			writeRows(b, f.typ, p)
		case itemRows(f):
			writeRow(b, p, f)
			writeRows(b, f.typ.Elem(), p+"[]")
		default:
			writeRow(b, p, f)
		}
	}
}

func writeRow(b *strings.Builder, path string, f field) {
	fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", path, typeName(f), defaultText(f), escapeCell(describeField(f)))
}

func writeUnimplemented(b *strings.Builder, t reflect.Type, path string) {
	for _, f := range fieldsOf(t) {
		p := path + f.key
		switch {
		case f.kind == kindUnimplemented:
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", p, escapeCell(f.help), escapeCell(f.instead))
		case f.kind == kindStruct && f.typ != channelOptionsType:
			writeUnimplemented(b, f.typ, p+".")
		case itemRows(f):
			writeUnimplemented(b, f.typ.Elem(), p+"[].")
		}
	}
}

// writeStatus writes one row per key, tables of keys as one row when none
// of their keys is unsupported, so that the table names every Centrifugo
// key (Gyre declares them all) and what becomes of it.
func writeStatus(b *strings.Builder, t reflect.Type, path string) {
	for _, f := range fieldsOf(t) {
		p := path + f.key
		var elem reflect.Type
		switch {
		case f.kind == kindStruct:
			elem = f.typ
		case f.kind == kindStructs:
			elem = f.typ.Elem()
			p += "[]"
		}
		if f.kind == kindStruct && f.instead != "" {
			fmt.Fprintf(b, "| `%s.*` | not supported: %s |\n", p, escapeCell(f.instead))
			continue
		}
		if elem != nil {
			// A section switched on by an unsupported enabled key is
			// unsupported as a whole: its other keys mean nothing.
			if instead, ok := unsupportedSection(elem); ok {
				fmt.Fprintf(b, "| `%s.*` | not supported: %s |\n", p, escapeCell(instead))
				continue
			}
		}
		switch {
		case f.kind == kindUnimplemented || f.instead != "":
			fmt.Fprintf(b, "| `%s` | not supported: %s |\n", p, escapeCell(f.instead))
		case f.refused != "":
			fmt.Fprintf(b, "| `%s` | refused when set: %s |\n", p, escapeCell(f.refused))
		case elem != nil && hasUnsupported(elem):
			writeStatus(b, elem, p+".")
		case elem != nil:
			fmt.Fprintf(b, "| `%s.*` | supported |\n", p)
		default:
			fmt.Fprintf(b, "| `%s` | supported |\n", p)
		}
	}
}

// unsupportedSection tells whether the table type t is switched on by an
// enabled key that Gyre does not support, and what to do instead.
func unsupportedSection(t reflect.Type) (string, bool) {
	for _, f := range fieldsOf(t) {
		if f.key == "enabled" && f.instead != "" {
			return f.instead, true
		}
	}
	return "", false
}

// hasUnsupported reports whether a table type holds, at any depth, a key
// Gyre does not honour.
func hasUnsupported(t reflect.Type) bool {
	for _, f := range fieldsOf(t) {
		switch {
		case f.kind == kindUnimplemented || f.instead != "" || f.refused != "":
			return true
		case f.kind == kindStruct && hasUnsupported(f.typ):
			return true
		case f.kind == kindStructs && hasUnsupported(f.typ.Elem()):
			return true
		}
	}
	return false
}

func typeName(f field) string {
	switch f.kind {
	case kindString:
		return "string"
	case kindBool:
		return "bool"
	case kindInt:
		return "integer"
	case kindDuration:
		return "duration"
	case kindStrings:
		return "list of strings"
	case kindStringMap:
		return "table of strings"
	case kindStructs:
		return "list of tables"
	default:
		return "table"
	}
}

func defaultText(f field) string {
	switch {
	case f.hasDef && f.kind == kindStrings:
		return "`[\"" + strings.Join(strings.Split(f.def, ","), "\", \"") + "\"]`"
	case f.hasDef && f.kind == kindString:
		return "`\"" + f.def + "\"`"
	case f.hasDef:
		return "`" + f.def + "`"
	}
	switch f.kind {
	case kindString:
		return "`\"\"`"
	case kindBool:
		return "`false`"
	case kindInt:
		return "`0`"
	case kindDuration:
		return "`0s`"
	case kindStrings, kindStructs:
		return "`[]`"
	case kindStringMap:
		return "`{}`"
	}
	return ""
}

// describeField is the help text followed by the limits Validate enforces.
func describeField(f field) string {
	parts := []string{f.help}
	if f.instead != "" {
		parts = []string{"**Not supported by Gyre** (accepted, no effect): " + f.instead}
	}
	if f.refused != "" {
		parts = append(parts, "**Refused when set:** "+f.refused)
	}
	if f.enum != nil {
		parts = append(parts, "One of: "+describeEnum(f.enum)+".")
	}
	if f.kind == kindInt && (f.min != "" || f.max != "") {
		lo := f.min
		if lo == "" {
			lo = "0"
		}
		if f.max != "" {
			parts = append(parts, "Range: "+lo+" to "+f.max+".")
		} else {
			parts = append(parts, "At least "+lo+".")
		}
	}
	if f.precision != "" {
		parts = append(parts, "Precision: "+f.precision+".")
	}
	if f.typ == channelOptionsType {
		parts = append(parts, "See [Channel options](#channel-options).")
	}
	switch {
	case f.kind == kindStructs && f.typ.Elem() == namespaceType:
		parts = append(parts, "Each item takes `name` and the [channel options](#channel-options).")
	case f.kind == kindStructs:
		parts = append(parts, "Each item takes the keys below (`[]`).")
	}
	return strings.Join(parts, " ")
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

const docIntro = `# Configuration reference

<!-- Generated from server/config by "go generate ./server/config"; do not edit. -->

Gyre reads the configuration keys of Centrifugo v6, so a Centrifugo configuration file
loads unchanged. This page lists every key Gyre knows, its type, its default and what it
does.

## Sources

Values come from four layers; each overrides the ones before it:

1. **Defaults**, as listed below.
2. **A file** in JSON, YAML or TOML, chosen by its extension (` + "`.json`, `.yaml`/`.yml`, `.toml`" + `).
   Keys nest as tables: ` + "`{\"client\": {\"token\": {\"hmac_secret_key\": \"...\"}}}`" + `.
3. **Environment variables**: ` + "`GYRE_`" + ` followed by the key path upper-cased, with dots as
   underscores: ` + "`GYRE_HTTP_SERVER_PORT=9000`, `GYRE_CLIENT_TOKEN_HMAC_SECRET_KEY=...`" + `.
   The same names with Centrifugo's prefix are read too (` + "`CENTRIFUGO_HTTP_SERVER_PORT=9000`" + `), so
   a container configured for Centrifugo keeps its settings; when both set one key, ` + "`GYRE_`" + `
   wins. A variable with either prefix that names no key is logged as a warning, with the
   closest known name when it looks like a typo:
   ` + "`GYRE_HTTP_SERVR_PORT=9000`" + ` gives "unknown environment variable GYRE_HTTP_SERVR_PORT
   ignored (did you mean GYRE_HTTP_SERVER_PORT?)", and ` + "`GYRE_PORT=9000`" + ` is warned about too.
   The variables Kubernetes sets in a pod for a Service named ` + "`gyre`" + ` or ` + "`gyre-…`" + `
   (` + "`centrifugo…`" + ` for the other prefix) give no warning: for a Service ` + "`gyre-api`" + `,
   ` + "`GYRE_API_SERVICE_HOST`, `GYRE_API_SERVICE_PORT`, `GYRE_API_SERVICE_PORT_<PORT NAME>`" + `,
   ` + "`GYRE_API_PORT=tcp://…`" + ` and ` + "`GYRE_API_PORT_8000_TCP`" + ` (with ` + "`_PROTO`, `_PORT`, `_ADDR`" + `);
   for ` + "`gyre`" + `, ` + "`GYRE_SERVICE_HOST`, `GYRE_PORT`" + ` and so on. A variable counts as one of
   them when its name has one of these forms and ` + "`<SERVICE>_SERVICE_HOST`" + ` is set as well, as
   Kubernetes always sets it; without it, the name is warned about like any other. A
   Service whose variable is also a key's name (` + "`gyre-grpc-api`" + ` gives
   ` + "`GYRE_GRPC_API_PORT=tcp://10.0.0.1:10000`" + `) does not set the key: the variable is ignored
   with a warning that names the Service, while a port you set yourself in that variable
   (` + "`GYRE_GRPC_API_PORT=10001`" + `) still applies.
   A key Gyre does not implement is warned about once at start-up, naming the variable
   that set it, whichever layers set it.
4. **Command-line flags**, keyed by the same paths (` + "`--http_server.port=9000`" + `).

Without a config file, ` + "`gyre`" + ` runs on development defaults (fresh secrets, open channels, a
demo page) and layers the environment and flags over them: ` + "`GYRE_LOG_LEVEL=debug`" + ` changes the
log level and leaves the development defaults in place, as ` + "`--log.level debug`" + ` does. A config
file, even an empty ` + "`{}`" + `, is what turns development mode off.

The result is then validated; the server refuses to start on an invalid value, with an
error naming the key, e.g. ` + "`config: channel.namespaces[2].history_ttl: invalid duration \"5x\"`" + `.

On SIGHUP the server reads its file again (environment and flags as at start) and, when the
result is valid, applies the channel options (` + "`channel.*`" + `) and the token settings
(` + "`client.token.*`, `client.subscription_token.*`" + `) without dropping connections. Every
other change, including the proxies and which proxy a namespace uses, applies at the next
restart; the reload logs a warning naming those keys.

## Value syntax

- **Durations** are strings with a unit: ` + "`\"25s\"`, `\"1m30s\"`, `\"720h\"`, `\"500ms\"`" + `. As in
  Centrifugo v6, a bare number is not a duration (only ` + "`0`" + ` is accepted); Gyre says so instead
  of reading it as nanoseconds.
- **Booleans** from the environment or flags take ` + "`true`/`false`/`1`/`0`" + `.
- **Lists** in a file are lists; a single string is a list of one (` + "`\"address\": \"redis:6379\"`" + `).
  From the environment or flags, a list is a JSON array or items separated by commas or
  spaces: ` + "`GYRE_CLIENT_ALLOWED_ORIGINS=\"https://a.example https://b.example\"`" + `.
- **Namespaces** from the environment: ` + "`GYRE_CHANNEL_NAMESPACES`" + ` holds a JSON array of
  namespaces, or just their names (` + "`\"chat news\"`" + `); options of a namespace then come from
  ` + "`GYRE_CHANNEL_NAMESPACES_<NAME>_<OPTION>`" + `, with the name upper-cased and ` + "`.`/`-`" + ` as ` + "`_`" + `.
  Flags address an item by index: ` + "`--channel.namespaces[0].presence=true`" + `.
- **Key names** in files match without regard to case, as in Centrifugo.
- A ` + "`null`" + ` value leaves the default in place.

## Unknown keys

An unknown key in a file, or an unknown ` + "`GYRE_`/`CENTRIFUGO_`" + ` variable, does not stop the server: it is
logged as a warning, so that typos show and newer files still load.
`

const docStatusIntro = `
## Every Centrifugo key and its status

Gyre reads every key of Centrifugo v6's configuration. This table, generated from the same
declarations as the rest of this page, says for each one whether Gyre honours it; a row
ending in ` + "`.*`" + ` stands for all the keys of a table, every one supported. A key that is not
supported is still accepted, so that a Centrifugo file loads unchanged; when it is set to a
value that would change what Centrifugo does, the server logs one warning naming it at
start-up, however many of the file and the variables set it, and ` + "`gyre checkconfig`" + ` names
it as well and fails (exit status 1) unless given ` + "`--allow-unsupported`" + `.

`

const docUnimplementedIntro = `
## Known keys that Gyre does not implement

These Centrifugo keys are recognised but have no effect in Gyre. A value that would turn
the feature on (a ` + "`true`" + `, a non-empty list, a scalar other than its default) logs a
warning and fails ` + "`gyre checkconfig`" + ` unless ` + "`--allow-unsupported`" + ` is given; it never stops the
server, and a dump of Centrifugo's defaults loads silently.
The ` + "`channel.namespaces[]`" + ` keys apply to ` + "`channel.without_namespace`" + ` too.

`
