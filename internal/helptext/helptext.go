// Package helptext checks the help that chargeonce's commands print, for the
// tests of each command: every flag is written one way, "--name", and every
// default is said once.
package helptext

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// singleDash is a flag written "-name", as the flag package's own help
	// writes it.
	singleDash = regexp.MustCompile(`^\s+-[A-Za-z]`)
	// flagStart starts the entry of one flag in the help.
	flagStart = regexp.MustCompile(`^\s+--[A-Za-z]`)
)

// Faults lists what is wrong with help, one message per fault; none means
// the help is written the way every command writes it.
func Faults(help string) []string {
	var faults []string
	var entry []string
	flush := func() {
		if n := strings.Count(strings.Join(entry, "\n"), "(default"); n > 1 {
			faults = append(faults, fmt.Sprintf("the default is said %d times:\n%s", n, strings.Join(entry, "\n")))
		}
		entry = nil
	}
	for line := range strings.Lines(help) {
		line = strings.TrimRight(line, "\n")
		if singleDash.MatchString(line) {
			faults = append(faults, fmt.Sprintf("a flag written with one dash: %q", line))
		}
		if flagStart.MatchString(line) {
			flush()
		}
		if len(entry) > 0 || flagStart.MatchString(line) {
			entry = append(entry, line)
		}
	}
	flush()
	return faults
}
