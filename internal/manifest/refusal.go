package manifest

import "fmt"

// RefusalReason says why one object's write was refused. The values are
// api/v1alpha3's refusal reasons, which status, events and metrics carry as
// they are: the planner imports nothing from Kubernetes, so it cannot name
// the API's constants, and internal/metrics' tests pin every value to one.
type RefusalReason string

const (
	// RefusalIncompleteIdentity: a new object lacks what its path needs
	// (resource, name) or a part is not a plain path segment.
	RefusalIncompleteIdentity RefusalReason = "IncompleteIdentity"
	// RefusalInvalidDocument: the YAML is not exactly one Kubernetes object
	// document naming the object it was upserted as.
	RefusalInvalidDocument RefusalReason = "InvalidDocument"
	// RefusalNotEncrypted: a sensitive object's YAML is not a SOPS document.
	RefusalNotEncrypted RefusalReason = "NotEncrypted"
	// RefusalSensitiveShared: a sensitive object would be appended to an
	// existing file or share a file with another document.
	RefusalSensitiveShared RefusalReason = "SensitiveShared"
	// RefusalPlaintextBesideEncrypted: a plaintext object would share a file
	// with an encrypted document.
	RefusalPlaintextBesideEncrypted RefusalReason = "PlaintextBesideEncrypted"
	// RefusalAuxiliaryPath: the new object's path is an auxiliary file
	// (a ConfigMap named "kustomization", for example).
	RefusalAuxiliaryPath RefusalReason = "AuxiliaryPath"
	// RefusalInvalidPlacement: the declared placement template (spec.placement)
	// is malformed or renders a path the operator will not write (outside
	// the root, a dot segment, not a .yaml/.yml file, a plaintext object in
	// a .sops.yaml file). The object is not written anywhere else.
	RefusalInvalidPlacement RefusalReason = "InvalidPlacement"
)

// Refusal is one object the planner would not write safely. The object is
// left as it is in Git; the rest of the batch is planned.
type Refusal struct {
	ID     ObjectID
	Path   string // where it would have gone, when known
	Reason RefusalReason
	Detail string
}

func (r Refusal) Error() string {
	where := ""
	if r.Path != "" {
		where = " at " + r.Path
	}
	return fmt.Sprintf("refused to write %s%s: %s: %s", r.ID, where, r.Reason, r.Detail)
}
