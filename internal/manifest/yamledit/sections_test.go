package yamledit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// TestSections: each section is its marker line and leading comments
// (the head) and the replaceable rest (the body).
func TestSections(t *testing.T) {
	type part struct{ head, body string } // head: marker and leading comments; body: the replaceable rest
	tests := []struct {
		name    string
		content string
		want    []part
	}{
		{"empty file", "", []part{{"", ""}}},
		{"one document", "a: 1\n", []part{{"", "a: 1\n"}}},
		{"leading comments and directives stay in the head", "# c\n\n%YAML 1.2\na: 1\n", []part{{"# c\n\n%YAML 1.2\n", "a: 1\n"}}},
		{"indented comment before content", "  # c\na: 1\n", []part{{"  # c\n", "a: 1\n"}}},
		{"two documents", "a: 1\n---\nb: 2\n", []part{{"", "a: 1\n"}, {"---\n", "b: 2\n"}}},
		{"file opening with a marker", "---\na: 1\n", []part{{"---\n", "a: 1\n"}}},
		{"marker with a comment", "a: 1\n--- # two\n# about b\nb: 2\n", []part{{"", "a: 1\n"}, {"--- # two\n# about b\n", "b: 2\n"}}},
		{"marker with content", "--- {a: 1}\n", []part{{"---", " {a: 1}\n"}}},
		{"trailing bare marker", "a: 1\n---\n", []part{{"", "a: 1\n"}, {"---\n", ""}}},
		{"CRLF line endings", "a: 1\r\n---\r\nb: 2\r\n", []part{{"", "a: 1\r\n"}, {"---\r\n", "b: 2\r\n"}}},
		{"four dashes are content, not a marker", "a: |\n  x\n----\n", []part{{"", "a: |\n  x\n----\n"}}},
		{"indented dashes are content", "a: |\n  ---\n", []part{{"", "a: |\n  ---\n"}}},
		{"no trailing newline", "a: 1\n---\nb: 2", []part{{"", "a: 1\n"}, {"---\n", "b: 2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []part
			for _, s := range yamledit.Sections([]byte(tt.content)) {
				got = append(got, part{head: tt.content[s.Start:s.Body], body: tt.content[s.Body:s.End]})
			}
			require.Equal(t, tt.want, got)
		})
	}
}
