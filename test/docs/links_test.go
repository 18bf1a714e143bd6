package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestEveryLinkFindsItsPageAndHeading fails when a relative Markdown link
// in the repository's pages names a file that does not exist, or a
// #heading its page does not have (as GitHub renders the anchors), so a
// renamed heading cannot leave readers at the top of a page.
func TestEveryLinkFindsItsPageAndHeading(t *testing.T) {
	root := harness.RepoRoot()
	pages := markdownPages(t, root)
	anchors := map[string]map[string]bool{}
	for _, p := range pages {
		anchors[p] = headingAnchors(pageText(t, p))
	}
	var broken []string
	for _, p := range pages {
		for _, link := range relativeLinks(pageText(t, p)) {
			file, anchor, _ := strings.Cut(link, "#")
			target := p
			if file != "" {
				target = filepath.Join(filepath.Dir(p), filepath.FromSlash(file))
			}
			rel, _ := filepath.Rel(root, p)
			if _, err := os.Stat(target); err != nil {
				broken = append(broken, rel+": "+link+" (no such file)")
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !anchors[target][anchor] {
				broken = append(broken, rel+": "+link+" (no such heading)")
			}
		}
	}
	require.Empty(t, broken, "links to a missing page or heading")
}

// markdownPages are the .md files of the repository, outside .git.
func markdownPages(t *testing.T, root string) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	return pages
}

func pageText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

var (
	headingLine  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	urlScheme    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// headingAnchors are the anchors GitHub gives a page's headings: lower
// case, punctuation dropped, spaces as hyphens, and -1, -2 … after a
// repeated one. Headings inside code fences are not headings.
func headingAnchors(page string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range outsideFences(page) {
		m := headingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := slugOf(m[1])
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			anchors[slug+"-"+strconv.Itoa(n+1)] = true
			continue
		}
		seen[slug] = 0
		anchors[slug] = true
	}
	return anchors
}

func slugOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// relativeLinks are the targets of the page's links that are not URLs,
// outside code fences.
func relativeLinks(page string) []string {
	var links []string
	for _, line := range outsideFences(page) {
		for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
			if !urlScheme.MatchString(m[1]) {
				links = append(links, m[1])
			}
		}
	}
	return links
}

// outsideFences are the page's lines that are not in a ``` code block.
func outsideFences(page string) []string {
	var lines []string
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, line)
		}
	}
	return lines
}
