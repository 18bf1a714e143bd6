package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// waitForMirror polls the remote until every workload's file is on main.
func (d *demo) waitForMirror(ctx context.Context) error {
	d.say("Waiting for the operator to commit them to Git...")
	_, want := workloads()
	deadline := time.After(d.MirrorTimeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := d.operatorFailed(); err != nil {
			return err
		}
		if missing := d.missingFiles(want); len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("after %s these files are still not on main: %s (GitTarget: %s; see the operator log)",
				d.MirrorTimeout, strings.Join(d.missingFiles(want), ", "), d.targetConditions())
		case <-tick.C:
		}
	}
}

func (d *demo) missingFiles(want []string) []string {
	tree, _ := d.git.Git(repoName, "ls-tree", "-r", "--name-only", "main") // no main yet: all missing
	have := map[string]bool{}
	for _, f := range strings.Split(tree, "\n") {
		have[f] = true
	}
	var missing []string
	for _, f := range want {
		if !have[f] {
			missing = append(missing, f)
		}
	}
	return missing
}

// targetConditions summarizes the GitTarget's Ready condition and any
// condition not in its normal state, for an error.
func (d *demo) targetConditions() string {
	var gt v1alpha3.GitTarget
	key := client.ObjectKey{Namespace: namespace, Name: targetName}
	if err := d.kube.Client().Get(context.Background(), key, &gt); err != nil {
		return err.Error()
	}
	var parts []string
	for _, c := range gt.Status.Conditions {
		if c.Type == v1alpha3.ConditionReady || c.Reason != v1alpha3.ReasonSucceeded {
			parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	if len(parts) == 0 {
		return "no conditions yet"
	}
	return strings.Join(parts, "; ")
}

// showMirror prints the mirrored tree, one file and the history.
func (d *demo) showMirror() error {
	_, files := workloads()
	for _, step := range []struct {
		title string
		args  []string
	}{
		{"The mirrored tree (git ls-tree -r --name-only main):", []string{"ls-tree", "-r", "--name-only", "main"}},
		{"One file (git show main:" + files[0] + "):", []string{"show", "main:" + files[0]}},
		{"The history (git log --format='%h %an %s'):", []string{"log", "--format=%h %an %s", "main"}},
	} {
		out, err := d.git.Git(repoName, step.args...)
		if err != nil {
			return err
		}
		d.say("%s", step.title)
		for _, line := range strings.Split(out, "\n") {
			fmt.Fprintf(d.Out, "      %s\n", line)
		}
	}
	return nil
}

func (d *demo) printTryIt(kubeconfig string) {
	clone, _ := url.Parse(d.git.HTTPURL(repoName))
	clone.User = url.UserPassword(gitUser, gitPassword)
	d.say("The mirror is live. Try it in another terminal:")
	for _, line := range []string{
		"export KUBECONFIG=" + kubeconfig,
		"kubectl -n demo create configmap hello --from-literal=greeting=hi",
		"kubectl -n demo scale deployment web --replicas=3",
		"kubectl -n demo delete configmap feature-flags",
		"kubectl get gitops -A",
		"git clone " + clone.String(),
	} {
		fmt.Fprintf(d.Out, "      %s\n", line)
	}
	d.say("New commits are printed here as they land. Ctrl-C stops everything.")
}

// followCommits prints each new commit on main, with its changed files,
// until ctx ends.
func (d *demo) followCommits(ctx context.Context) error {
	last, err := d.git.Git(repoName, "rev-parse", "main")
	if err != nil {
		return err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(d.Out)
			return nil
		case <-tick.C:
		}
		if err := d.operatorFailed(); err != nil {
			return err
		}
		head, err := d.git.Git(repoName, "rev-parse", "main")
		if err != nil {
			return err
		}
		if head == last {
			continue
		}
		log, err := d.git.Git(repoName, "log", "--reverse", "--format=>%h %an: %s", "--name-status", last+".."+head)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(log, "\n") {
			if commit, ok := strings.CutPrefix(line, ">"); ok {
				fmt.Fprintf(d.Out, "--> new commit %s\n", commit)
			} else if line != "" {
				status, file, _ := strings.Cut(line, "\t")
				fmt.Fprintf(d.Out, "      %s %s\n", status, file)
			}
		}
		last = head
	}
}
