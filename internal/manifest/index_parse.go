package manifest

import (
	"runtime"
	"sync"
)

// minParallelParses is the fewest files a load parses on more than one
// goroutine: below it the goroutines cost more than they save.
const minParallelParses = 256

// parseAll parses, on as many goroutines as the process may run at once,
// the manifests among paths (files' keys under the index's root) that
// known does not already describe. A restart's first window knows only
// the renderings written so far: at 50,000 ConfigMaps the first index load
// parsed 18,400 files, about 0.6 s of CPU on one goroutine, while every
// watch stream waited for the worker. Parsing is pure (parseManifest), so
// the files are parsed apart and registered in path order afterwards, as
// one goroutine would have. A path that is not a manifest, or not under
// the root, is left to add, which judges it.
func (ix *Index) parseAll(paths []string, files map[string][]byte, known map[string]*manifestFile) map[string]parsedManifest {
	var todo []string
	for _, p := range paths {
		if _, ok := known[p]; ok {
			continue
		}
		if rel, err := ix.relative(p); err == nil && classify(rel) == classManifest {
			todo = append(todo, p)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(todo)/minParallelParses)
	if workers < 2 {
		return nil
	}
	parsed := make([]parsedManifest, len(todo))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(todo); i += workers {
				parsed[i] = parseManifest(todo[i], files[todo[i]])
			}
		}()
	}
	wg.Wait()
	out := make(map[string]parsedManifest, len(todo))
	for i, p := range todo {
		out[p] = parsed[i]
	}
	return out
}
