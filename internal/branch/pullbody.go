package branch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// A pull request's body is its rendered template followed by a summary
// block: an HTML comment holding the pull request's running summary as
// JSON. Forges show the rendered part and hide the comment; a restarted
// worker (or a new owner of the branch) reads the block back from the body
// FindPullRequest returns and continues the summary rather than starting
// it over.

// Default pull request templates. The title does not change from one
// update to the next (a forge's notifications follow title changes); the
// body reads as a change log in a forge's web UI.
const (
	DefaultPullRequestTitle = `Cluster changes to {{.Target}}`
	DefaultPullRequestBody  = `Changes made in the cluster to {{.Target}}, mirrored by GitOps Reverser into ` +
		"`{{.Head}}`" + `. Merging brings them into ` + "`{{.Base}}`" + `; the next change then opens a new pull request.

**{{.Summary}}** (commits: {{.Commits}})
{{if .Counts}}
| Type | Added | Changed | Deleted |
| --- | ---: | ---: | ---: |
{{range .Counts}}| {{.Type}} | {{.Added}} | {{.Changed}} | {{.Deleted}} |
{{end}}{{end}}{{if .Actors}}
Changed by: {{range .Actors}}{{.}} {{end}}
{{end}}{{if .Notes}}
{{range .Notes}}> {{.}}
{{end}}{{end}}{{if .Files}}
<details><summary>Files</summary>

{{range .Files}}- {{.Operation}} {{if .URL}}[` + "`{{.Path}}`" + `]({{.URL}}){{else}}` + "`{{.Path}}`" + `{{end}}
{{end}}{{if .MoreFiles}}- and {{.MoreFiles}} more
{{end}}
</details>
{{end}}`
)

// PullRequestData is what a pull request's title and body templates
// render: the running summary of the pull request's commits.
type PullRequestData struct {
	// Target is the GitTarget as namespace/name (the targets, comma
	// separated, when several share the head branch).
	Target string
	// Base and Head are the branches.
	Base, Head string
	// Counts are the changes per type, sorted by type.
	Counts []TypeCount
	// Actors are the people and service accounts attribution named,
	// sorted; never the committer or an unresolved author.
	Actors []string
	// Files are the files changed, the most recent first, at most
	// maxSummaryFiles; MoreFiles counts the rest.
	Files     []PullFile
	MoreFiles int
	// Notes say what the worker did besides committing (the base merged
	// in, the head rebuilt on the base).
	Notes []string
	// Commits counts the worker's commits in the pull request.
	Commits int
}

// TypeCount counts the changes of one type (group/Kind, or Kind for the
// core group) in a pull request's commits: each commit's creates, updates
// and deletes, so an object created and then changed twice counts once
// in Added and twice in Changed.
type TypeCount struct {
	Type    string `json:"type"`
	Added   int    `json:"added,omitempty"`
	Changed int    `json:"changed,omitempty"`
	Deleted int    `json:"deleted,omitempty"`
}

// PullFile is a file a pull request changes, with its last operation and,
// where the forge has a web UI (forges.FileLinker), its page on the head
// branch.
type PullFile struct {
	Path      string `json:"path"`
	Operation string `json:"op"`
	URL       string `json:"-"`
}

// Summary counts the changes, e.g. "3 added, 1 changed".
func (d PullRequestData) Summary() string {
	var a, c, del int
	for _, t := range d.Counts {
		a, c, del = a+t.Added, c+t.Changed, del+t.Deleted
	}
	return capitalize(countPhrase("no changes", counted{a, "added"}, counted{c, "changed"}, counted{del, "deleted"}))
}

// pullRequestFields are the fields pull request templates may read.
func pullRequestFields() map[string]bool {
	return map[string]bool{
		"Target": true, "Base": true, "Head": true, "Counts": true, "Actors": true, "Files": true,
		"MoreFiles": true, "Notes": true, "Commits": true, "Summary": true,
		"Type": true, "Added": true, "Changed": true, "Deleted": true, "Path": true, "Operation": true, "URL": true,
	}
}

// pullRequestField reads a field of the pull request data or of one of its
// rows; ok is false for values of other types.
func pullRequestField(v any, name string) (out any, ok bool, err error) {
	switch x := v.(type) {
	case PullRequestData:
		switch name {
		case "Target":
			return x.Target, true, nil
		case "Base":
			return x.Base, true, nil
		case "Head":
			return x.Head, true, nil
		case "Counts":
			return x.Counts, true, nil
		case "Actors":
			return x.Actors, true, nil
		case "Files":
			return x.Files, true, nil
		case "MoreFiles":
			return x.MoreFiles, true, nil
		case "Notes":
			return x.Notes, true, nil
		case "Commits":
			return x.Commits, true, nil
		case "Summary":
			return x.Summary(), true, nil
		}
	case TypeCount:
		switch name {
		case "Type":
			return x.Type, true, nil
		case "Added":
			return x.Added, true, nil
		case "Changed":
			return x.Changed, true, nil
		case "Deleted":
			return x.Deleted, true, nil
		}
	case PullFile:
		switch name {
		case "Path":
			return x.Path, true, nil
		case "Operation":
			return x.Operation, true, nil
		case "URL":
			return x.URL, true, nil
		}
	default:
		return nil, false, nil
	}
	return nil, true, fmt.Errorf("field .%s of %T", name, v)
}

// pullSummary is a pull request's running summary: what the summary block
// holds, and what the templates render (data).
type pullSummary struct {
	Commits int         `json:"commits"`
	Types   []TypeCount `json:"types,omitempty"`
	Actors  []string    `json:"actors,omitempty"`
	// Files, the most recent first, capped at maxSummaryFiles; MoreFiles
	// counts the paths dropped.
	Files     []PullFile `json:"files,omitempty"`
	MoreFiles int        `json:"moreFiles,omitempty"`
	Notes     []string   `json:"notes,omitempty"`
}

const (
	// maxSummaryFiles caps the files a body lists: a pull request of
	// thousands of objects still has a body GitHub takes.
	maxSummaryFiles = 200
	// maxNotes keeps the most recent notes.
	maxNotes = 10
	// maxBodyChars stays below GitHub's 65,536 characters for a body.
	maxBodyChars = 60000
	// summaryMarker opens the summary block.
	summaryMarker = "<!-- gitops-reverser:summary "
)

// addCommit folds a commit's changes into the summary.
func (s *pullSummary) addCommit(changes []Change, actor string) {
	s.Commits++
	for _, c := range changes {
		typ := typeName(c.APIVersion, c.Kind)
		i := slices.IndexFunc(s.Types, func(t TypeCount) bool { return t.Type == typ })
		if i < 0 {
			s.Types = append(s.Types, TypeCount{Type: typ})
			i = len(s.Types) - 1
		}
		switch c.Operation {
		case "create":
			s.Types[i].Added++
		case "delete":
			s.Types[i].Deleted++
		default:
			s.Types[i].Changed++
		}
		s.addFile(PullFile{Path: c.Path, Operation: c.Operation})
	}
	slices.SortFunc(s.Types, func(a, b TypeCount) int { return strings.Compare(a.Type, b.Type) })
	if actor != "" && !slices.Contains(s.Actors, actor) {
		s.Actors = append(s.Actors, actor)
		slices.Sort(s.Actors)
	}
}

// addFile puts f first, dropping an older entry of its path and the
// oldest beyond the cap.
func (s *pullSummary) addFile(f PullFile) {
	if f.Path == "" {
		return
	}
	if i := slices.IndexFunc(s.Files, func(o PullFile) bool { return o.Path == f.Path }); i >= 0 {
		s.Files = slices.Delete(s.Files, i, i+1)
	}
	s.Files = append([]PullFile{f}, s.Files...)
	if len(s.Files) > maxSummaryFiles {
		s.MoreFiles += len(s.Files) - maxSummaryFiles
		s.Files = s.Files[:maxSummaryFiles]
	}
}

func (s *pullSummary) note(text string) {
	s.Notes = append(s.Notes, text)
	if len(s.Notes) > maxNotes {
		s.Notes = s.Notes[len(s.Notes)-maxNotes:]
	}
}

// merge adds the summary of later commits to s (read back from a body).
func (s pullSummary) merge(later pullSummary) pullSummary {
	out := s
	out.Types = slices.Clone(s.Types)
	out.Files = slices.Clone(s.Files)
	out.Actors = slices.Clone(s.Actors)
	out.Notes = slices.Clone(s.Notes)
	out.Commits += later.Commits
	for _, t := range later.Types {
		i := slices.IndexFunc(out.Types, func(o TypeCount) bool { return o.Type == t.Type })
		if i < 0 {
			out.Types = append(out.Types, t)
			continue
		}
		out.Types[i].Added += t.Added
		out.Types[i].Changed += t.Changed
		out.Types[i].Deleted += t.Deleted
	}
	slices.SortFunc(out.Types, func(a, b TypeCount) int { return strings.Compare(a.Type, b.Type) })
	for i := len(later.Files) - 1; i >= 0; i-- {
		out.addFile(later.Files[i])
	}
	out.MoreFiles += later.MoreFiles
	for _, a := range later.Actors {
		if !slices.Contains(out.Actors, a) {
			out.Actors = append(out.Actors, a)
		}
	}
	slices.Sort(out.Actors)
	for _, n := range later.Notes {
		out.note(n)
	}
	return out
}

// typeName is group/Kind, or Kind for the core group.
func typeName(apiVersion, kind string) string {
	if group, _, ok := strings.Cut(apiVersion, "/"); ok {
		return group + "/" + kind
	}
	return kind
}

// summaryBlock is the HTML comment holding s. encoding/json escapes <, >
// and &, so the JSON never closes the comment early.
func summaryBlock(s pullSummary) string {
	raw, _ := json.Marshal(s) // plain data: it always marshals
	return summaryMarker + string(raw) + " -->"
}

// readSummary reads the summary block back from a body; ok is false when
// the body has none (a human rewrote it, or another tool opened the pull
// request).
func readSummary(body string) (pullSummary, bool) {
	i := strings.LastIndex(body, summaryMarker)
	if i < 0 {
		return pullSummary{}, false
	}
	rest := body[i+len(summaryMarker):]
	end := strings.Index(rest, "-->")
	if end < 0 {
		return pullSummary{}, false
	}
	var s pullSummary
	if err := json.Unmarshal([]byte(strings.TrimSpace(rest[:end])), &s); err != nil {
		return pullSummary{}, false
	}
	return s, true
}

// composeBody is the rendered body and the summary block, capped below
// GitHub's limit: a rendered part too long is cut (its files list is the
// long part), and the block drops files until it fits.
func composeBody(rendered string, s pullSummary) string {
	for len(summaryBlock(s)) > maxBodyChars/2 && len(s.Files) > 0 {
		n := len(s.Files) / 2
		s.MoreFiles += len(s.Files) - n
		s.Files = s.Files[:n]
	}
	block := summaryBlock(s)
	rendered = strings.TrimRight(rendered, "\n")
	if room := maxBodyChars - len(block) - len(bodyCut) - 2; len(rendered) > room {
		rendered = strings.ToValidUTF8(rendered[:max(room, 0)], "") + bodyCut
	}
	return rendered + "\n\n" + block
}

const bodyCut = "\n\n… (cut to fit the forge's limit)"
