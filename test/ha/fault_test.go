package ha

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// fault says what went wrong in a replica the test did not ask for ("" when
// nothing did): a process that ended on its own, or, with logs, a panic in
// any replica's log. The binary recovers a panic in a reconcile or a
// webhook handler into a log line so a running operator goes on; here that
// line fails the test, as a crash does.
func (c *cluster) fault(logs bool) string {
	c.mu.Lock()
	started := slices.Clone(c.started)
	c.mu.Unlock()
	var faults []string
	for _, r := range started {
		if r.exited() && r.crashed {
			faults = append(faults, fmt.Sprintf("replica %s ended on its own (%v); its log %s ends:\n%s",
				r.identity, r.waitErr, r.logPath, harness.TailFile(r.logPath)))
		} else if logs {
			switch line, err := panicIn(r.logPath); {
			case err != nil:
				faults = append(faults, fmt.Sprintf("replica %s: %v", r.identity, err))
			case line != "":
				faults = append(faults, fmt.Sprintf("replica %s logged a panic (log %s): %s", r.identity, r.logPath, line))
			}
		}
	}
	return strings.Join(faults, "\n")
}

// How a panic shows in an operator's log: the runtime's crash and fatal
// error (a concurrent map write) start a line; controller-runtime's and
// apimachinery's recovery, the operator's own in its HTTP handlers, and
// net/http's are inside a structured one.
var (
	panicLineStarts = []string{"panic: ", "fatal error: "}
	panicInLine     = []string{"Observed a panic", "recovered a panic", "http: panic serving"}
)

// panicIn is the first line of the log at path that shows a panic, "" when
// none does; an error when the log cannot be read through.
func panicIn(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading its log: %w", err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if slices.ContainsFunc(panicLineStarts, func(m string) bool { return strings.HasPrefix(line, m) }) ||
			slices.ContainsFunc(panicInLine, func(m string) bool { return strings.Contains(line, m) }) {
			return line, nil
		}
	}
	if err := scanner.Err(); err != nil {
		return "", fmt.Errorf("reading its log %s: %w", path, err)
	}
	return "", nil
}

// TestAPanicInAReplicasLogIsFound: each way a panic shows in an operator's
// log is found, and an ordinary log is not taken for one.
func TestAPanicInAReplicasLogIsFound(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ log, want string }{
		"a crash": {log: "{\"level\":\"info\"}\npanic: runtime error: index out of range\n\ngoroutine 7 [running]:\n",
			want: "panic: runtime error: index out of range"},
		"a fatal error": {log: "fatal error: concurrent map writes\n", want: "fatal error: concurrent map writes"},
		"a reconcile recovered": {log: `{"level":"error","logger":"runtime","msg":"Observed a panic","panic":"boom"}` + "\n",
			want: `{"level":"error","logger":"runtime","msg":"Observed a panic","panic":"boom"}`},
		"a handler recovered": {log: `{"level":"error","logger":"admission","msg":"recovered a panic"}` + "\n",
			want: `{"level":"error","logger":"admission","msg":"recovered a panic"}`},
		"none": {log: `{"level":"info","msg":"the panic button is a word in a value"}` + "\n"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".log")
		require.NoError(t, os.WriteFile(path, []byte(tc.log), 0o600))
		line, err := panicIn(path)
		require.NoError(t, err, name)
		require.Equal(t, tc.want, line, name)
	}
}
