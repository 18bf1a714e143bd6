package forges

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendTrailers(t *testing.T) {
	for _, tc := range []struct {
		name, message string
		trailers      []string
		want          string
	}{
		{"no trailers leave the message alone", "Update ConfigMap a/b", nil, "Update ConfigMap a/b"},
		{"a subject gets a trailer block after a blank line", "Update ConfigMap a/b\n", []string{"Changed-With: helm"},
			"Update ConfigMap a/b\n\nChanged-With: helm\n"},
		{"a subject that looks like a trailer is still the subject", "Fix: the thing", []string{"Changed-With: helm"},
			"Fix: the thing\n\nChanged-With: helm\n"},
		{"a body that is not a trailer block", "Change 2 objects\n\n- create ConfigMap a/b\n- delete Secret c/d\n",
			[]string{"Changed-With: helm", "Changed-With: kubectl-edit"},
			"Change 2 objects\n\n- create ConfigMap a/b\n- delete Secret c/d\n\nChanged-With: helm\nChanged-With: kubectl-edit\n"},
		{"an existing trailer block is joined", "Update x\n\nSigned-off-by: A <a@example.com>\n\n", []string{"Changed-With: helm"},
			"Update x\n\nSigned-off-by: A <a@example.com>\nChanged-With: helm\n"},
		{"a trailer already present is not repeated", "Update x\n\nChanged-With: helm\n", []string{"Changed-With: helm", "Co-authored-by: B <b@example.com>"},
			"Update x\n\nChanged-With: helm\nCo-authored-by: B <b@example.com>\n"},
		{"nothing new keeps the message", "Update x\n\nChanged-With: helm", []string{"Changed-With: helm", "Changed-With: helm"},
			"Update x\n\nChanged-With: helm\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, AppendTrailers(tc.message, tc.trailers...))
		})
	}
}
