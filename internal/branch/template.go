package branch

import (
	"fmt"
	"slices"
	"strings"
	"text/template/parse"
)

// messageTemplate is a commit message template in Go template syntax,
// executed over MessageData without reflection. text/template looks methods
// up by name through reflection, which makes the linker keep every exported
// method of every type in the binary (~35 MB more binary, ~15 MiB more
// resident memory for this operator); the message data is a handful of
// known fields, so a small walker over the parse tree serves the same
// syntax: fields, range over .Changes, if/else, with, pipes, and the
// functions below.
type messageTemplate struct {
	name string
	tree *parse.Tree
	// fields are the field names the template may read (templateFields for
	// commit messages, pullRequestFields for pull requests).
	fields map[string]bool
}

// templateFuncs are the functions templates may call.
func templateFuncs() map[string]func(args []any) (any, error) {
	return map[string]func(args []any) (any, error){
		"capitalize": func(a []any) (any, error) { return capitalize(fmt.Sprint(oneArg(a))), nil },
		"lower":      func(a []any) (any, error) { return strings.ToLower(fmt.Sprint(oneArg(a))), nil },
		"upper":      func(a []any) (any, error) { return strings.ToUpper(fmt.Sprint(oneArg(a))), nil },
		"len":        func(a []any) (any, error) { return length(oneArg(a)) },
		"not":        func(a []any) (any, error) { return !truthy(oneArg(a)), nil },
		"eq":         func(a []any) (any, error) { return len(a) == 2 && fmt.Sprint(a[0]) == fmt.Sprint(a[1]), nil },
		"ne":         func(a []any) (any, error) { return !(len(a) == 2 && fmt.Sprint(a[0]) == fmt.Sprint(a[1])), nil },
	}
}

// templateFields are the fields a template may read: on the message and,
// inside range, on each change.
func templateFields() map[string]bool {
	return map[string]bool{
		"Operation": true, "APIVersion": true, "Kind": true, "Namespace": true, "Name": true, "Path": true, "Ref": true,
		"Target": true, "Branch": true, "Author": true, "Changes": true, "Summary": true, "Tools": true,
	}
}

func parseMessageTemplate(name, text string) (*messageTemplate, error) {
	return parseTemplate(name, text, templateFields())
}

// parseTemplate parses text for the walker, allowing fields only.
func parseTemplate(name, text string, fields map[string]bool) (*messageTemplate, error) {
	names := map[string]any{}
	for fn := range templateFuncs() {
		names[fn] = true // the parser only asks whether a name is a function
	}
	trees, err := parse.Parse(name, text, "", "", names)
	if err != nil {
		return nil, err
	}
	t := &messageTemplate{name: name, tree: trees[name], fields: fields}
	if len(trees) > 1 {
		return nil, fmt.Errorf("%s: define and block are not supported", name)
	}
	if err := t.check(t.tree.Root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// check refuses, at parse time, what the walker cannot execute, so a bad
// template is reported on the GitProvider, not at commit time.
func (t *messageTemplate) check(node parse.Node) error {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := t.check(c); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return t.checkPipe(n.Pipe)
	case *parse.IfNode:
		return t.checkBranch(&n.BranchNode)
	case *parse.RangeNode:
		return t.checkBranch(&n.BranchNode)
	case *parse.WithNode:
		return t.checkBranch(&n.BranchNode)
	case *parse.TextNode, *parse.CommentNode:
	default:
		return fmt.Errorf("%s is not supported in commit message templates", node)
	}
	return nil
}

func (t *messageTemplate) checkBranch(b *parse.BranchNode) error {
	for _, err := range []error{t.checkPipe(b.Pipe), t.check(b.List), t.check(b.ElseList)} {
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *messageTemplate) checkPipe(p *parse.PipeNode) error {
	if len(p.Decl) > 0 {
		return fmt.Errorf("variables are not supported: %s", p)
	}
	for _, cmd := range p.Cmds {
		for _, arg := range cmd.Args {
			if err := t.checkArg(arg); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *messageTemplate) checkArg(arg parse.Node) error {
	switch a := arg.(type) {
	case *parse.FieldNode:
		return t.checkFields(a.Ident)
	case *parse.PipeNode:
		return t.checkPipe(a)
	case *parse.IdentifierNode, *parse.DotNode, *parse.StringNode, *parse.NumberNode, *parse.BoolNode:
	case *parse.VariableNode:
		if a.Ident[0] != "$" {
			return fmt.Errorf("variables are not supported: %s", a)
		}
		return t.checkFields(a.Ident[1:])
	default:
		return fmt.Errorf("%s is not supported in commit message templates", arg)
	}
	return nil
}

func (t *messageTemplate) checkFields(names []string) error {
	for _, f := range names {
		if !t.fields[f] {
			return fmt.Errorf("unknown field .%s (fields: %s)", f, fieldList(t.fields))
		}
	}
	return nil
}

// fieldList names the fields a template may read, for its parse error.
func fieldList(fields map[string]bool) string {
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, "."+f)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// execute renders the template over data into a text of about size
// bytes, then the newline ending it: a replay's message lists tens of
// thousands of objects (1.4 MB at 31,500), and a buffer grown by doubling
// and then copied held about five times that at the commit's peak.
func (t *messageTemplate) execute(data any, size int) (string, error) {
	var out strings.Builder
	out.Grow(size + 1)
	w := &walker{out: &out, root: data, funcs: templateFuncs()}
	if err := w.walk(t.tree.Root, data); err != nil {
		return "", fmt.Errorf("%s: %w", t.name, err)
	}
	out.WriteByte('\n')
	return out.String(), nil
}
