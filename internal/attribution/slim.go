package attribution

import "github.com/configbutler/gitops-reverser/internal/facts"

// maxInterned bounds the interner: past it, it starts again empty (later
// facts then share the new copies). A cluster has a few hundred actors
// and namespaces, so in practice it never refills.
const maxInterned = 10_000

// interner hands out one copy of each string, so the index's many facts
// share their actors' and namespaces' strings instead of each keeping the
// copy JSON decoding made.
type interner struct {
	strings map[string]string
}

func (in *interner) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.strings[s]; ok {
		return v
	}
	if in.strings == nil || len(in.strings) >= maxInterned {
		in.strings = make(map[string]string)
	}
	in.strings[s] = s
	return s
}

// slim is what the index keeps of a fact: the keys it is filed under, the
// actor that names the author, and the stage time. What no lookup reads is
// dropped (the stream, which the stream index knows; the version; the
// actor's groups, which name no author), and the strings many facts repeat
// are shared. Callers hold the index lock.
func (x *Index) slim(f facts.Fact) facts.Fact {
	f.Stream = facts.StreamKey{}
	f.Version = ""
	f.Subresource = ""
	f.Verb = x.names.intern(f.Verb)
	f.Namespace = x.names.intern(f.Namespace)
	f.Actor = facts.Actor{Username: x.names.intern(f.Actor.Username), DisplayName: x.names.intern(f.Actor.DisplayName),
		Email: x.names.intern(f.Actor.Email)}
	return f
}
