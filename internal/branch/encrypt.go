package branch

import "github.com/configbutler/gitops-reverser/internal/manifest"

// RefusalEncryptionFailed: the target's encryptor could not encrypt a
// sensitive object, so it is not written (v1alpha3.ReasonEncryptionFailed).
const RefusalEncryptionFailed manifest.RefusalReason = "EncryptionFailed"

// sealed returns the YAML to plan for an upsert: a sensitive object's is
// encrypted with the target's encryptor, which is handed the object's
// current document so an unchanged object keeps its bytes. Without an
// encryptor the plaintext goes on and the planner refuses it
// (NotEncrypted): the planner stays the last line of defence.
func (ts *targetState) sealed(wr Write) ([]byte, *manifest.Refusal) {
	if !wr.Sensitive || ts.target.Encryptor == nil {
		return wr.YAML, nil
	}
	existing, _ := ts.index.Document(wr.ID)
	out, err := ts.target.Encryptor.EncryptTree(wr.ID.String(), wr.YAML, wr.Node, existing)
	if err != nil {
		return nil, &manifest.Refusal{ID: wr.ID, Reason: RefusalEncryptionFailed, Detail: err.Error()}
	}
	return out, nil
}

// planner plans the target's commits: new objects go where the target's
// placement says; the first write into the target adds the README and,
// when the target encrypts, a .sops.yaml naming its recipients, so `sops`
// works in a checkout.
func (ts *targetState) planner() manifest.Planner {
	if ts.target.Encryptor == nil {
		return manifest.Planner{Placement: ts.target.Placement}
	}
	return manifest.Planner{Placement: ts.target.Placement, Bootstrap: map[string][]byte{
		"README.md":  manifest.BootstrapReadme(ts.index.Root()),
		".sops.yaml": ts.target.Encryptor.SopsConfig(),
	}}
}
