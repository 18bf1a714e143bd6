package branch

import (
	"fmt"

	"github.com/configbutler/gitops-reverser/gitfile"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// windowPlan is one window planned against the target's index: the file
// changes to commit and what they mean.
type windowPlan struct {
	target TargetKey
	// files are the commit's changes, each carrying the blob its path
	// holds at the tip the plan was made on.
	files []gitfile.Change
	// result is the planner's answer, which the index folds in once the
	// commit landed.
	result   manifest.Result
	changes  []Change
	refusals []manifest.Refusal
	// sweepDeletes counts deletes that came from a replay's sweep.
	sweepDeletes int
	// placements are the created objects by the ladder step that placed them.
	placements []manifest.PlacementSource
}

// plan turns a window into file changes. A replay's sweeps become deletes
// planned before the window's writes, so an object the window also writes
// is kept.
func (s *branchState) plan(win *window) (*windowPlan, error) {
	ts := s.targets[win.target]
	ix := ts.index
	var ops []manifest.Op
	swept := map[manifest.ObjectID]bool{}
	for _, d := range manifest.SweepAll(ix, win.sweeps) {
		ops = append(ops, d)
		swept[identity(d.ID)] = true
	}
	var refusals []manifest.Refusal
	for _, wr := range win.writes { // read only: no copy of a replay's writes
		if wr.YAML == nil {
			ops = append(ops, manifest.Delete{ID: wr.ID})
			continue
		}
		content, refusal := ts.sealed(wr)
		if refusal != nil {
			refusals = append(refusals, *refusal)
			continue
		}
		upsert := manifest.Upsert{ID: wr.ID, YAML: content, Sensitive: wr.Sensitive}
		if !wr.Sensitive {
			// A Write's YAML is sanitize's rendering; a sensitive object's
			// content is its ciphertext instead.
			upsert.Rendered, upsert.Node = true, wr.Node
		}
		ops = append(ops, upsert)
	}
	res, err := ts.planner().Plan(ix, ops)
	if err != nil {
		// The worker names the GitTarget when it reports the failure.
		return nil, fmt.Errorf("planning the commit: %w", err)
	}
	// The changes go to the forge as they are, with their base blobs: no
	// second list of every file a replay writes.
	for i := range res.Changes {
		res.Changes[i].BaseBlob = ts.blobIDs[res.Changes[i].Path] // "" for a path the tip does not have
	}
	plan := &windowPlan{target: win.target, result: res, files: res.Changes, refusals: append(refusals, res.Refusals...)}
	plan.changes = describe(res, win.toolsOf)
	for _, o := range res.Objects {
		if o.Action == manifest.ActionDelete && swept[identity(o.ID)] {
			plan.sweepDeletes++
		}
		if o.Placement != "" {
			plan.placements = append(plan.placements, o.Placement)
		}
	}
	// Of the planner's answer the commit keeps what Index.Apply reads (the
	// changes and their parsed files): the objects it wrote are described
	// above, and a replay's list of them (144 bytes an object) would
	// otherwise stay beside the description through the push.
	plan.result.Objects, plan.result.Refusals = nil, nil
	return plan, nil
}

// describe names the objects a plan changes, and the tools that changed
// them, for the commit message. A sweep's delete has no write, and so no
// tool.
func describe(res manifest.Result, toolsOf func(manifest.ObjectID) []string) []Change {
	out := make([]Change, 0, len(res.Objects))
	for _, o := range res.Objects {
		out = append(out, Change{Operation: string(o.Action), APIVersion: o.ID.APIVersion(), Kind: o.ID.Kind,
			Namespace: o.ID.Namespace, Name: o.ID.Name, Path: o.Path, Tools: toolsOf(o.ID)})
	}
	return out
}
