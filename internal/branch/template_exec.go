package branch

import (
	"fmt"
	"reflect"
	"strings"
	"text/template/parse"
)

// walker executes a checked template's parse tree.
type walker struct {
	out   *strings.Builder
	root  any // MessageData or PullRequestData
	funcs map[string]func([]any) (any, error)
}

func (w *walker) walk(node parse.Node, dot any) error {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := w.walk(c, dot); err != nil {
				return err
			}
		}
	case *parse.TextNode:
		w.out.Write(n.Text) //nolint:errcheck // a strings.Builder does not fail
	case *parse.ActionNode:
		v, err := w.pipe(n.Pipe, dot)
		if err != nil {
			return err
		}
		fmt.Fprint(w.out, v)
	case *parse.IfNode:
		return w.branch(&n.BranchNode, dot, func(v any) (bool, any) { return truthy(v), dot })
	case *parse.WithNode:
		return w.branch(&n.BranchNode, dot, func(v any) (bool, any) { return truthy(v), v })
	case *parse.RangeNode:
		return w.rangeOver(n, dot)
	}
	return nil
}

func (w *walker) branch(b *parse.BranchNode, dot any, decide func(any) (bool, any)) error {
	v, err := w.pipe(b.Pipe, dot)
	if err != nil {
		return err
	}
	if ok, next := decide(v); ok {
		return w.walk(b.List, next)
	}
	return w.walk(b.ElseList, dot)
}

func (w *walker) rangeOver(n *parse.RangeNode, dot any) error {
	v, err := w.pipe(n.Pipe, dot)
	if err != nil {
		return err
	}
	walkItem := func(item any) error { return w.walk(n.List, item) }
	count, err := rangeItems(v, walkItem)
	if err != nil || count > 0 {
		return err
	}
	return w.walk(n.ElseList, dot)
}

// rangeItems calls each on the elements of the lists templates range over,
// in order, and returns how many there are. One element is boxed at a
// time: a replay's message ranges over tens of thousands of changes, and
// a list of them all as values was 5 MB of a 31,500-object commit's peak.
func rangeItems(v any, each func(any) error) (int, error) {
	switch x := v.(type) {
	case []Change:
		return len(x), eachItem(x, each)
	case []TypeCount:
		return len(x), eachItem(x, each)
	case []PullFile:
		return len(x), eachItem(x, each)
	case []string:
		return len(x), eachItem(x, each)
	}
	return 0, fmt.Errorf("range over %T", v)
}

func eachItem[T any](xs []T, each func(any) error) error {
	for _, x := range xs {
		if err := each(x); err != nil {
			return err
		}
	}
	return nil
}

// pipe evaluates a pipeline: each command's result is the last argument of
// the next.
func (w *walker) pipe(p *parse.PipeNode, dot any) (any, error) {
	var final any
	for i, cmd := range p.Cmds {
		v, err := w.command(cmd, dot, final, i > 0)
		if err != nil {
			return nil, err
		}
		final = v
	}
	return final, nil
}

func (w *walker) command(cmd *parse.CommandNode, dot, final any, piped bool) (any, error) {
	first := cmd.Args[0]
	if id, ok := first.(*parse.IdentifierNode); ok {
		var args []any
		for _, a := range cmd.Args[1:] {
			v, err := w.arg(a, dot)
			if err != nil {
				return nil, err
			}
			args = append(args, v)
		}
		if piped {
			args = append(args, final)
		}
		return w.funcs[id.Ident](args)
	}
	if piped || len(cmd.Args) > 1 {
		return nil, fmt.Errorf("%s is not a function", first)
	}
	return w.arg(first, dot)
}

func (w *walker) arg(a parse.Node, dot any) (any, error) {
	switch n := a.(type) {
	case *parse.FieldNode:
		return fields(dot, n.Ident)
	case *parse.DotNode:
		return dot, nil
	case *parse.VariableNode: // $ and $.Field: the whole message
		return fields(w.root, n.Ident[1:])
	case *parse.PipeNode:
		return w.pipe(n, dot)
	case *parse.StringNode:
		return n.Text, nil
	case *parse.BoolNode:
		return n.True, nil
	case *parse.NumberNode:
		return n.Text, nil
	}
	return nil, fmt.Errorf("%s is not supported", a)
}

func fields(v any, names []string) (any, error) {
	for _, name := range names {
		var err error
		if v, err = field(v, name); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// field reads a field of the message or of a change by name.
func field(v any, name string) (any, error) {
	if d, ok := v.(MessageData); ok {
		switch name {
		case "Target":
			return d.Target, nil
		case "Branch":
			return d.Branch, nil
		case "Author":
			return d.Author, nil
		case "Changes":
			return d.Changes, nil
		case "Summary":
			return d.Summary(), nil
		case "Tools":
			return strings.Join(d.Tools(), ", "), nil
		}
		v = d.Change
	}
	if out, ok, err := pullRequestField(v, name); ok {
		return out, err
	}
	c, ok := v.(Change)
	if !ok {
		return nil, fmt.Errorf("field .%s of %T", name, v)
	}
	switch name {
	case "Operation":
		return c.Operation, nil
	case "APIVersion":
		return c.APIVersion, nil
	case "Kind":
		return c.Kind, nil
	case "Namespace":
		return c.Namespace, nil
	case "Name":
		return c.Name, nil
	case "Path":
		return c.Path, nil
	case "Ref":
		return c.Ref(), nil
	case "Tools":
		return strings.Join(c.Tools, ", "), nil
	}
	return nil, fmt.Errorf("field .%s of a change", name)
}

func oneArg(args []any) any {
	if len(args) == 0 {
		return nil
	}
	return args[len(args)-1]
}

func length(v any) (any, error) {
	switch x := v.(type) {
	case []Change:
		return len(x), nil
	case string:
		return len(x), nil
	case []TypeCount:
		return len(x), nil
	case []PullFile:
		return len(x), nil
	case []string:
		return len(x), nil
	}
	return nil, fmt.Errorf("len of %T", v)
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int:
		return x != 0
	case []Change:
		return len(x) > 0
	case []TypeCount:
		return len(x) > 0
	case []PullFile:
		return len(x) > 0
	case []string:
		return len(x) > 0
	}
	return !reflect.ValueOf(v).IsZero()
}
