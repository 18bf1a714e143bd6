package forges

import (
	"regexp"
	"slices"
	"strings"
)

// trailerLine is a line git reads as a trailer: a token of letters, digits
// and '-', a colon, a value.
var trailerLine = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*: \S`)

// AppendTrailers adds trailers ("Key: value" lines) to the trailer block at
// the end of a commit message, as git interpret-trailers does: into the
// message's last paragraph when that already is a trailer block (every line
// a trailer, and not the subject), else as a new paragraph after a blank
// line. A trailer the block already holds is not repeated. The message
// comes back ending in one newline; without trailers it is unchanged.
func AppendTrailers(message string, trailers ...string) string {
	if len(trailers) == 0 {
		return message
	}
	body := strings.TrimRight(message, " \t\r\n")
	var block []string
	if i := strings.LastIndex(body, "\n\n"); i >= 0 {
		last := strings.Split(body[i+2:], "\n")
		if !slices.ContainsFunc(last, func(l string) bool { return !trailerLine.MatchString(l) }) {
			block = last
		}
	}
	var added []string
	for _, t := range trailers {
		if !slices.Contains(block, t) && !slices.Contains(added, t) {
			added = append(added, t)
		}
	}
	if len(added) == 0 {
		return body + "\n"
	}
	sep := "\n\n"
	if block != nil {
		sep = "\n"
	}
	return body + sep + strings.Join(added, "\n") + "\n"
}
