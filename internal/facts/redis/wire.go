package redis

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// Each stream entry holds two fields: the entry's sequence number in its
// stream (1, 2, 3, ... as published, which is how a follower counts the
// facts a trim took from it) and the fact.
const (
	fieldSeq  = "n"
	fieldFact = "f"
)

// wireVersion is written into every encoded fact so that a later layout can
// be told apart from this one by a process of either version. An admission
// fact is written as wireCandidateVersion: a process from before admission
// facts skips it as undecodable instead of filing a review that may never
// have persisted as an audit fact (which would name its actor at once).
const (
	wireVersion          = 1
	wireCandidateVersion = 2
)

// wireFact is facts.Fact as it is stored; Stream is not stored, since the
// stream key names it. Slices carry no omitempty: a nil and an empty slice
// are told apart on the way back.
type wireFact struct {
	V               int         `json:"v"`
	AuditID         string      `json:"id,omitempty"`
	Version         string      `json:"ver,omitempty"`
	Verb            string      `json:"verb,omitempty"`
	Subresource     string      `json:"sub,omitempty"`
	Namespace       string      `json:"ns,omitempty"`
	Name            string      `json:"name,omitempty"`
	UID             string      `json:"uid,omitempty"`
	ResourceVersion string      `json:"rv,omitempty"`
	Username        string      `json:"user,omitempty"`
	Groups          []string    `json:"groups"`
	DisplayName     string      `json:"display,omitempty"`
	Email           string      `json:"email,omitempty"`
	Stage           time.Time   `json:"stage"`
	Collection      *wireCollex `json:"coll"`
	Source          string      `json:"src,omitempty"`
	PreviousVersion string      `json:"prev,omitempty"`
	Digest          string      `json:"digest,omitempty"`
}

type wireCollex struct {
	LabelSelector string   `json:"ls,omitempty"`
	FieldSelector string   `json:"fs,omitempty"`
	UIDs          []string `json:"uids"`
}

func encodeFact(f facts.Fact) (string, error) {
	w := wireFact{
		V: wireVersion, AuditID: f.AuditID, Version: f.Version, Verb: f.Verb, Subresource: f.Subresource,
		Namespace: f.Namespace, Name: f.Name, UID: f.UID, ResourceVersion: f.ResourceVersion,
		Username: f.Actor.Username, Groups: f.Actor.Groups, DisplayName: f.Actor.DisplayName,
		Email: f.Actor.Email, Stage: f.Stage, Source: f.Source, PreviousVersion: f.PreviousVersion, Digest: f.Digest,
	}
	if f.IsCandidate() {
		w.V = wireCandidateVersion
	}
	if c := f.Collection; c != nil {
		w.Collection = &wireCollex{LabelSelector: c.LabelSelector, FieldSelector: c.FieldSelector, UIDs: c.UIDs}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("encoding fact %s: %w", f.AuditID, err)
	}
	return string(b), nil
}

var errNoSeq = errors.New("no sequence number")

// decodeEntry returns the entry's sequence number and fact. A sequence
// number of 0 means the entry had none (it is then not counted for gaps).
func decodeEntry(key facts.StreamKey, values map[string]any) (uint64, facts.Fact, error) {
	var seq uint64
	if s, ok := values[fieldSeq].(string); ok {
		n, err := strconv.ParseUint(s, 10, 64)
		if err == nil {
			seq = n
		}
	}
	if seq == 0 {
		return 0, facts.Fact{}, errNoSeq
	}
	raw, ok := values[fieldFact].(string)
	if !ok {
		return seq, facts.Fact{}, errors.New("no fact field")
	}
	var w wireFact
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return seq, facts.Fact{}, fmt.Errorf("decoding fact: %w", err)
	}
	if w.V != wireVersion && w.V != wireCandidateVersion {
		return seq, facts.Fact{}, fmt.Errorf("fact wire version %d, want %d or %d", w.V, wireVersion, wireCandidateVersion)
	}
	f := facts.Fact{
		AuditID: w.AuditID, Stream: key, Version: w.Version, Verb: w.Verb, Subresource: w.Subresource,
		Namespace: w.Namespace, Name: w.Name, UID: w.UID, ResourceVersion: w.ResourceVersion,
		Actor: facts.Actor{Username: w.Username, Groups: w.Groups, DisplayName: w.DisplayName, Email: w.Email},
		Stage: w.Stage, Source: w.Source, PreviousVersion: w.PreviousVersion, Digest: w.Digest,
	}
	if c := w.Collection; c != nil {
		f.Collection = &facts.Collection{LabelSelector: c.LabelSelector, FieldSelector: c.FieldSelector, UIDs: c.UIDs}
	}
	return seq, f, nil
}
