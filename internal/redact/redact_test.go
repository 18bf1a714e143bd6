package redact

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestURLHidesThePasswordAndKeepsTheRest(t *testing.T) {
	for raw, want := range map[string]string{
		"https://bot:ghp_s3cret@github.com/org/repo.git": "https://bot:xxxxx@github.com/org/repo.git",
		"https://bot@github.com/org/repo.git":            "https://bot@github.com/org/repo.git",
		"https://user:p%40ss@example.com/x?y=z#frag":     "https://user:xxxxx@example.com/x?y=z#frag",
		"https://example.com/path/with@sign":             "https://example.com/path/with@sign",
		"ssh://git@example.com:2222/org/repo.git":        "ssh://git@example.com:2222/org/repo.git",
		"redis://ops:s3cret@redis:6379/0":                "redis://ops:xxxxx@redis:6379/0",
		"git@github.com:org/repo.git":                    "git@github.com:org/repo.git",
		"redis:6379":                                     "redis:6379",
		// net/url refuses these; everything up to the last '@' goes.
		"redis://ops:s3cret@redis:6379/%zz":      "redis://xxxxx@redis:6379/%zz",
		"https://u:tok/en@host/repo.git":         "https://xxxxx@host/repo.git",
		"https://u:tok@example.com:notaport/r@x": "https://xxxxx@x",
	} {
		require.Equal(t, want, URL(raw), "URL(%q)", raw)
	}
}

func TestTextHidesThePasswordInAnyFormALibraryWroteIt(t *testing.T) {
	for _, raw := range []string{
		"https://bot:p%40ss%2Fw0rd@example.com:notaport/repo.git", // refused by net/url
		"https://bot:p%40ss%2Fw0rd@example.com/repo.git",
	} {
		_, err := url.Parse(raw)
		for _, text := range []string{raw, "p@ss/w0rd", "p%40ss%2Fw0rd", "p@ss%2Fw0rd", `"` + raw + `"`} {
			if err != nil {
				text += ": " + err.Error()
			}
			require.NotContains(t, Text(text, raw), "w0rd", "Text(%q, %q)", text, raw)
		}
	}
	require.Equal(t, "with@sign", Text("with@sign", "https://example.com/path/with@sign"))
	require.Equal(t, "git@host:org/repo", Text("git@host:org/repo", "git@host:org/repo"))
}

func TestURLsInHidesEveryPasswordInText(t *testing.T) {
	got := URLsIn(`probing https://bot:s3cret@git.example.com/org/repo.git: 401; also ssh://git@host:22/x and http://u:p@h`)
	require.Equal(t, `probing https://bot:xxxxx@git.example.com/org/repo.git: 401; also ssh://git@host:22/x and http://u:xxxxx@h`, got)
}
