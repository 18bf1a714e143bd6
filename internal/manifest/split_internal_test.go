package manifest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitSections(t *testing.T) {
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
			for _, s := range splitSections([]byte(tt.content)) {
				got = append(got, part{head: tt.content[s.start:s.body], body: tt.content[s.body:s.end]})
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestAppendDocument(t *testing.T) {
	tests := []struct {
		name, existing, want string
	}{
		{"after a document", "a: 1\n", "a: 1\n---\nb: 2\n"},
		{"after a missing final newline", "a: 1", "a: 1\n---\nb: 2\n"},
		{"after a trailing bare marker", "a: 1\n---\n", "a: 1\n---\nb: 2\n"},
		{"into a whitespace-only file", "\n  \n", "b: 2\n"},
		{"after comments only", "# notes\n", "# notes\n---\nb: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := &fileEdit{appended: [][]byte{[]byte("b: 2\n")}, appendedDocs: []*document{{}}}
			if tt.existing != "" {
				content := []byte(tt.existing)
				sections := splitSections(content)
				file.original = &manifestFile{content: content, sections: sections, docs: make([]*document, len(sections))}
				file.docs = file.original.docs
			}
			require.Equal(t, tt.want, string(file.render()))
		})
	}
}
