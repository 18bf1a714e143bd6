package forges

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ValidatePath accepts a relative, slash-separated path that Git can store
// and check out: not empty, no empty, "." or ".." segments, no ".git"
// segment (Git refuses such trees on checkout), no NUL. Every forge checks
// paths with it before anything is sent.
func ValidatePath(filePath string) error {
	switch {
	case filePath == "":
		return errors.New("path is empty")
	case strings.HasPrefix(filePath, "/"):
		return errors.New("path must be relative")
	case strings.IndexByte(filePath, 0) >= 0:
		return errors.New("path contains a NUL byte")
	}
	for segment := range strings.SplitSeq(filePath, "/") {
		switch {
		case segment == "":
			return errors.New("path has an empty segment")
		case segment == "." || segment == "..":
			return fmt.Errorf("path has a %q segment", segment)
		case strings.EqualFold(segment, ".git"):
			return errors.New("path has a .git segment")
		}
	}
	return nil
}

// CleanPrefix turns a Reader.Tree prefix into a slash-separated directory
// path without leading "./" or trailing "/", "" for the whole tree.
func CleanPrefix(prefix string) (string, error) {
	trimmed := strings.Trim(strings.TrimPrefix(prefix, "./"), "/")
	if trimmed == "" || trimmed == "." {
		return "", nil
	}
	if err := ValidatePath(trimmed); err != nil {
		return "", fmt.Errorf("invalid prefix %q: %w", prefix, err)
	}
	return trimmed, nil
}

// EscapePathSegments escapes each slash-separated segment of a branch name
// or repository path for a URL path, keeping the slashes between them:
// forges' web UIs take "feature/x" and "apps/cm.yaml" as path segments, and
// a segment's own "#", "?", "%" or space must not end or change the URL.
func EscapePathSegments(p string) string {
	segments := strings.Split(p, "/")
	for i, segment := range segments {
		segments[i] = url.PathEscape(segment)
	}
	return strings.Join(segments, "/")
}
