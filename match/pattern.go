package match

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidPattern is wrapped by the errors of [ValidPattern] and [Index.Set]
// for a pattern that breaks the syntax.
var ErrInvalidPattern = errors.New("match: invalid pattern")

// IsPattern reports whether s contains a '*' or a '>' anywhere. A channel name
// for which it is true is meant as a pattern, and must then pass
// [ValidPattern]; one for which it is false is a plain name.
func IsPattern(s string) bool {
	return strings.ContainsAny(s, "*>")
}

// ValidPattern returns nil if s is a valid pattern: not empty, made of
// non-empty tokens separated by '.', where '*' and '>' appear only as whole
// tokens, '>' only as the last one, and at least one token is a wildcard.
// Otherwise its error wraps [ErrInvalidPattern] and says what is wrong.
func ValidPattern(s string) error {
	if s == "" {
		return invalid(s, "empty")
	}
	wildcard := false
	for i, rest := 1, s; ; i++ {
		tok, after, more := strings.Cut(rest, ".")
		switch {
		case tok == "":
			return invalid(s, fmt.Sprintf("token %d is empty", i))
		case tok == "*":
			wildcard = true
		case tok == ">":
			if more {
				return invalid(s, "'>' is not the last token")
			}
			wildcard = true
		case IsPattern(tok):
			return invalid(s, fmt.Sprintf("token %d (%q) mixes a wildcard with other characters", i, tok))
		}
		if !more {
			break
		}
		rest = after
	}
	if !wildcard {
		return invalid(s, "no wildcard token: a plain name, not a pattern")
	}
	return nil
}

func invalid(pattern, why string) error {
	return fmt.Errorf("%w %q: %s", ErrInvalidPattern, pattern, why)
}
