package branch

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/configbutler/gitops-reverser/forges"
)

// Default commit message templates. They name the objects changed, so a
// forge's commit list reads as a change log.
const (
	DefaultEventTemplate = `{{capitalize .Operation}} {{.Kind}} {{.Ref}}`
	DefaultGroupTemplate = `Change {{len .Changes}} objects in {{.Target}}: {{.Summary}}
{{range .Changes}}
- {{.Operation}} {{.Kind}} {{.Ref}}{{end}}`
	DefaultReconcileTemplate = `Reconcile {{.Target}} with the cluster: {{.Summary}}
{{range .Changes}}
- {{.Operation}} {{.Kind}} {{.Ref}}{{end}}`
)

// Change is one object a commit writes, as templates see it.
type Change struct {
	// Operation is create, update or delete.
	Operation  string
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Path       string
	// Tools are the field managers that made the change (Write.ChangedWith);
	// templates read them as .Tools, joined with ", ".
	Tools []string
}

// Ref is namespace/name, or name for a cluster-scoped object.
func (c Change) Ref() string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}

// MessageData is what a commit message template renders. The single-object
// fields (Operation, Kind, Ref, ...) describe the first change, for the event
// template.
type MessageData struct {
	Change
	// Target is the GitTarget as namespace/name.
	Target  string
	Branch  string
	Author  string
	Changes []Change
}

// Tools are the distinct tools of all changes, sorted: the commit's
// Changed-With trailers, one per tool.
func (d MessageData) Tools() []string {
	var tools []string
	for _, c := range d.Changes {
		for _, t := range c.Tools {
			if !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
	}
	slices.Sort(tools)
	return tools
}

// ChangedWithTrailer is the trailer key naming a tool that made a change.
const ChangedWithTrailer = "Changed-With"

// Summary counts the changes by operation, e.g. "2 created, 1 deleted".
func (d MessageData) Summary() string {
	counts := map[string]int{}
	for _, c := range d.Changes {
		counts[c.Operation]++
	}
	return countPhrase("no changes", counted{counts["create"], "created"}, counted{counts["update"], "updated"}, counted{counts["delete"], "deleted"})
}

// counted is a number and the word it counts, for countPhrase.
type counted struct {
	n    int
	word string
}

// countPhrase joins the counts that are not zero ("2 created, 1 deleted"),
// or says none when all are.
func countPhrase(none string, counts ...counted) string {
	var parts []string
	for _, c := range counts {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.word))
		}
	}
	if len(parts) == 0 {
		return none
	}
	return strings.Join(parts, ", ")
}

// Messages renders commit messages from a GitProvider's templates.
type Messages struct {
	event, group, reconcile *messageTemplate
}

// ParseMessages compiles the templates; an empty one takes its default.
func ParseMessages(event, group, reconcile string) (*Messages, error) {
	m := &Messages{}
	for _, t := range []struct {
		name, text, def string
		dst             **messageTemplate
	}{
		{"eventTemplate", event, DefaultEventTemplate, &m.event},
		{"groupTemplate", group, DefaultGroupTemplate, &m.group},
		{"reconcileTemplate", reconcile, DefaultReconcileTemplate, &m.reconcile},
	} {
		text := t.text
		if text == "" {
			text = t.def
		}
		parsed, err := parseMessageTemplate(t.name, text)
		if err != nil {
			return nil, fmt.Errorf("parsing the commit message %s: %w", t.name, err)
		}
		*t.dst = parsed
	}
	return m, nil
}

// Render picks the template — reconcile for a replay's commit, event for one
// object, group otherwise — and renders it, then adds a Changed-With
// trailer for each tool of the changes (MessageData.Tools) to the
// message's trailer block. A template that writes those trailers itself
// does not get them twice.
func (m *Messages) Render(data MessageData, reconcile bool) (string, error) {
	if len(data.Changes) > 0 {
		data.Change = data.Changes[0]
	}
	tmpl := m.group
	switch {
	case reconcile:
		tmpl = m.reconcile
	case len(data.Changes) == 1:
		tmpl = m.event
	}
	out, err := tmpl.execute(data, messageSize(data.Changes))
	if err != nil {
		return "", fmt.Errorf("rendering the commit message %w", err)
	}
	msg := trimmedLine(out)
	if msg == "" {
		return "", fmt.Errorf("the commit message %s rendered empty", tmpl.name)
	}
	var trailers []string
	for _, tool := range data.Tools() {
		trailers = append(trailers, ChangedWithTrailer+": "+tool)
	}
	return forges.AppendTrailers(msg, trailers...), nil
}

// messageSize is about the length of a default message listing changes:
// one line an object.
func messageSize(changes []Change) int {
	n := 256
	for _, c := range changes {
		n += len(c.Operation) + len(c.Kind) + len(c.Namespace) + len(c.Name) + 6
	}
	return n
}

// trimmedLine is text without surrounding space, ending in one newline,
// or "" when only space is left. text ends in a newline (execute), so
// the result is mostly a part of it, not a copy of a message of megabytes.
func trimmedLine(text string) string {
	msg := strings.TrimSpace(text)
	if msg == "" {
		return ""
	}
	rest := strings.TrimLeftFunc(text, unicode.IsSpace)
	if rest[len(msg)] == '\n' {
		return rest[:len(msg)+1]
	}
	return msg + "\n"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
