package branch

// IndexParses is the number of YAML documents the target's index decoded
// since it was loaded, -1 when it has none. Read it only while the worker
// is idle (after Flush returned): the worker's goroutine owns the index.
func IndexParses(w *Worker, key TargetKey) int {
	ts, ok := w.state.targets[key]
	if !ok || ts.index == nil {
		return -1
	}
	return ts.index.Parses()
}
