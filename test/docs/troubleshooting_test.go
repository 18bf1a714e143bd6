// Package docs checks that the documentation keeps up with the API: every
// condition reason the API defines has a line in docs/troubleshooting.md.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestTroubleshootingNamesEveryReason fails when a Reason* constant of
// api/v1alpha3/conditions.go has no `Value` in docs/troubleshooting.md, so
// a reason added to the API cannot ship without saying what to do about it.
func TestTroubleshootingNamesEveryReason(t *testing.T) {
	root := harness.RepoRoot()
	reasons := reasonConstants(t, filepath.Join(root, "api", "v1alpha3", "conditions.go"))
	require.NotEmpty(t, reasons, "conditions.go defines no Reason* constants")

	page, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	require.NoError(t, err)
	var missing []string
	for name, value := range reasons {
		if !strings.Contains(string(page), "`"+value+"`") {
			missing = append(missing, name+" = "+strconv.Quote(value))
		}
	}
	require.Empty(t, missing, "docs/troubleshooting.md does not mention these reasons (as `Value`); add a row saying what each means and what to do")
}

// reasonConstants returns the string constants named Reason* in a Go file,
// by name.
func reasonConstants(t *testing.T, file string) map[string]string {
	t.Helper()
	parsed, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	reasons := map[string]string{}
	for _, decl := range parsed.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			for i, name := range spec.(*ast.ValueSpec).Names {
				if !strings.HasPrefix(name.Name, "Reason") {
					continue
				}
				values := spec.(*ast.ValueSpec).Values
				require.Greater(t, len(values), i, "%s has no value of its own", name.Name)
				lit, ok := values[i].(*ast.BasicLit)
				require.True(t, ok && lit.Kind == token.STRING, "%s is not a string literal", name.Name)
				value, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				reasons[name.Name] = value
			}
		}
	}
	return reasons
}
