package nats

import (
	"strings"
)

// Subjects, outside raw mode:
//
//	<prefix>.control                 control messages, to every node
//	<prefix>.c.<scope>.<name...>     a channel's publications, join and leave
//
// A channel is split as the engine splits it for pattern subscriptions:
// its scope (the namespace with its boundary, "news:", or ":" and "$:"
// for channels without one) is one token, and every dot-separated token
// of the rest is one more, so that a pattern ("news:eu.*.bus") is the
// subject "<prefix>.c.news:.eu.*.bus" and NATS delivers a node only what
// its patterns match. Tokens are escaped (escapeToken) so that any
// channel name is a valid subject and never a wildcard.

// split is the engine's channelRules.patternScope: the scope and the
// name after it.
func (b *Broker) split(channel string) (scope, name string) {
	boundary := b.cfg.NamespaceBoundary
	rest := strings.TrimPrefix(channel, b.cfg.PrivatePrefix)
	private := len(channel) - len(rest)
	if i := strings.Index(rest, boundary); i >= 0 {
		end := private + i + len(boundary)
		return channel[:end], channel[end:]
	}
	if private > 0 {
		return b.cfg.PrivatePrefix + boundary, rest
	}
	return boundary, rest
}

// joinScope is the inverse of split: the channel (or pattern) with scope
// and name.
func (b *Broker) joinScope(scope, name string) string {
	switch scope {
	case b.cfg.NamespaceBoundary:
		return name
	case b.cfg.PrivatePrefix + b.cfg.NamespaceBoundary:
		return b.cfg.PrivatePrefix + name
	}
	return scope + name
}

// channelSubject is the subject of a channel's messages.
func (b *Broker) channelSubject(channel string) string {
	if b.cfg.RawMode.Enabled {
		return b.rawSubject(channel)
	}
	scope, name := b.split(channel)
	return b.subject(scope, name, false)
}

// patternSubject is the subject a pattern subscribes: its wildcard tokens
// stay wildcards.
func (b *Broker) patternSubject(scope, name string) string {
	if b.cfg.RawMode.Enabled {
		return b.rawSubject(b.joinScope(scope, name))
	}
	return b.subject(scope, name, true)
}

func (b *Broker) subject(scope, name string, wildcards bool) string {
	var sb strings.Builder
	sb.Grow(len(b.channelBase) + len(scope) + len(name) + 8)
	sb.WriteString(b.channelBase)
	escapeToken(&sb, scope)
	for tok := range strings.SplitSeq(name, ".") {
		sb.WriteByte('.')
		if wildcards && (tok == "*" || tok == ">") {
			sb.WriteString(tok)
			continue
		}
		escapeToken(&sb, tok)
	}
	return sb.String()
}

// escapeToken writes tok as one subject token: bytes a subject cannot
// carry (space and control characters, '.', non-ASCII) and those that
// would make it a wildcard ('*', '>') or an escape ('%') are written as
// %XX; an empty token, which a subject cannot have, is a lone "%".
func escapeToken(sb *strings.Builder, tok string) {
	if tok == "" {
		sb.WriteByte('%')
		return
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c <= ' ' || c >= 0x7f || c == '.' || c == '*' || c == '>' || c == '%' {
			sb.WriteByte('%')
			sb.WriteByte(hex[c>>4])
			sb.WriteByte(hex[c&15])
			continue
		}
		sb.WriteByte(c)
	}
}

// rawSubject is a channel's (or pattern's) subject in raw mode.
func (b *Broker) rawSubject(channel string) string {
	if b.replace != nil {
		channel = b.replace.Replace(channel)
	}
	return b.cfg.RawMode.Prefix + channel
}

// rawChannel is the channel of a message received in raw mode on
// subject: the subject without the prefix, replaced back.
func (b *Broker) rawChannel(subject string) string {
	ch := strings.TrimPrefix(subject, b.cfg.RawMode.Prefix)
	if b.unreplace != nil {
		ch = b.unreplace.Replace(ch)
	}
	return ch
}
