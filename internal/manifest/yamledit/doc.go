// Package yamledit is the planner's YAML text editor. It cuts a file into
// its documents at "---" marker lines (Sections), edits one document's text
// so that it reads as a desired tree while every untouched byte stays as it
// was (Splice), and judges whether two trees hold the same content
// (Equivalent, Same, Misreadable).
//
// It works on bytes and go.yaml.in/yaml/v3 nodes only and knows nothing of
// Kubernetes objects, files in Git or placement: internal/manifest decides
// what to edit and proves every edit by parsing the result again and
// comparing it with Same before it writes it.
package yamledit
