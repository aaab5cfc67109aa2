package envflag

import (
	"errors"
	"strings"
)

// List is a flag that may be given several times, each time with one value
// or a comma-separated list, so that its environment variable, which can be
// set once only, holds a comma-separated list. Values cannot contain
// commas.
type List []string

// String implements flag.Value.
func (l *List) String() string {
	return strings.Join(*l, ",")
}

// Set implements flag.Value: it appends the comma-separated values of s.
func (l *List) Set(s string) error {
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v == "" {
			return errors.New("empty value in the list")
		}
		*l = append(*l, v)
	}
	return nil
}
