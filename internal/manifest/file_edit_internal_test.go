package manifest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

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
				sections := yamledit.Sections(content)
				file.original = &manifestFile{content: content, sections: sections, docs: make([]*document, len(sections))}
				file.docs = file.original.docs
			}
			require.Equal(t, tt.want, string(file.render()))
		})
	}
}
