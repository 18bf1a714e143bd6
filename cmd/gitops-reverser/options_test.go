package main

import (
	"bytes"
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpNamesEachDefaultOnce: the flag package prints a flag's default
// after its usage, so a usage that names the default too says it twice
// (`--operator-namespace` did: "(default $POD_NAMESPACE). (default
// "gitops-reverser")").
func TestHelpNamesEachDefaultOnce(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	fs := flag.NewFlagSet("gitops-reverser", flag.ContinueOnError)
	f := defaultFlags()
	f.bind(fs)
	var help bytes.Buffer
	fs.SetOutput(&help)
	fs.PrintDefaults()

	entries := regexp.MustCompile(`(?m)^  -`).Split(help.String(), -1)
	require.Greater(t, len(entries), 10, "the help lists the flags:\n%s", help.String())
	for _, entry := range entries[1:] {
		require.LessOrEqual(t, strings.Count(strings.ToLower(entry), "default"), 1,
			"a flag's help names its default more than once:\n  -%s", entry)
	}
}
