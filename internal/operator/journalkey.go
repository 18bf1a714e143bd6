package operator

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// journalKeySecret holds the key every replica seals the journal's
// sensitive writes with (branch.NewAEADSealer): a Secret's YAML never
// reaches Redis in clear, and any replica can restore what another
// journaled.
const (
	journalKeySecret = "gitops-reverser-journal-key"
	journalKeyField  = "key"
)

// journalKey reads the shared journal key from the operator namespace, and
// makes it when no replica has yet. Replicas starting together race to
// create it; the ones that lose read the winner's, so all seal alike. An
// API server that cannot answer yet is waited out with backoff
// (untilAnswered), not a reason to exit.
func journalKey(ctx context.Context, c client.Client, namespace string, backoff wait.Backoff, log logr.Logger) ([]byte, error) {
	key := client.ObjectKey{Namespace: namespace, Name: journalKeySecret}
	for range 2 {
		var s corev1.Secret
		err := untilAnswered(ctx, backoff, log, "reading the journal key Secret",
			func(ctx context.Context) error { return c.Get(ctx, key, &s) })
		if err == nil {
			k := s.Data[journalKeyField]
			if len(k) != 32 {
				return nil, fmt.Errorf("the journal key Secret %s holds %d bytes, not 32: delete it and the operator makes a new one", key, len(k))
			}
			return k, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the journal key Secret %s: %w", key, err)
		}
		fresh := make([]byte, 32)
		if _, err := rand.Read(fresh); err != nil {
			return nil, fmt.Errorf("making the journal key: %w", err)
		}
		s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: journalKeySecret,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "gitops-reverser"}},
			Data: map[string][]byte{journalKeyField: fresh}}
		// A create answered 5xx may have been made: the retry then finds
		// it there (AlreadyExists) and reads it, like another replica's.
		err = untilAnswered(ctx, backoff, log, "creating the journal key Secret",
			func(ctx context.Context) error { return c.Create(ctx, &s) })
		if err == nil {
			return fresh, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating the journal key Secret %s: %w", key, err)
		}
		// Another replica made it first: read theirs.
	}
	return nil, fmt.Errorf("the journal key Secret %s was made and gone again", key)
}
