package credentials

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// Kinds of objects that hold credentials; spec.knownHostsRef may name either.
const (
	kindSecret    = "Secret"
	kindConfigMap = "ConfigMap"
)

// MissingReferenceError says that an object a GitProvider field references,
// or a key in it, does not exist. It matches ErrSecretNotFound.
type MissingReferenceError struct {
	// Kind is Secret or ConfigMap.
	Kind      string
	Namespace string
	Name      string
	// Key is the missing key; empty when the whole object is missing.
	Key string
	// Field is the GitProvider field that names the object.
	Field string
}

func (e *MissingReferenceError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("%s %s/%s (%s) has no key %q", e.Kind, e.Namespace, e.Name, e.Field, e.Key)
	}
	return fmt.Sprintf("%s %s/%s (%s) not found", e.Kind, e.Namespace, e.Name, e.Field)
}

// Is makes errors.Is(err, ErrSecretNotFound) hold.
func (e *MissingReferenceError) Is(target error) bool { return target == ErrSecretNotFound }

func getSecret(ctx context.Context, c client.Reader, namespace, name, field string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &MissingReferenceError{Kind: kindSecret, Namespace: namespace, Name: name, Field: field}
		}
		return nil, fmt.Errorf("reading Secret %s/%s (%s): %w", namespace, name, field, err)
	}
	return secret, nil
}

// readKnownHostsRef returns the known_hosts ref names and the resource
// version of the object holding them.
func readKnownHostsRef(ctx context.Context, c client.Reader, namespace string, ref v1alpha3.KnownHostsReference) ([]byte, string, error) {
	const field = "spec.knownHostsRef"
	key := ref.Key
	if key == "" {
		key = DefaultKnownHostsKey
	}
	kind := ref.Kind
	if kind == "" {
		kind = kindSecret
	}
	var data map[string][]byte
	var version string
	switch kind {
	case kindSecret:
		secret, err := getSecret(ctx, c, namespace, ref.Name, field)
		if err != nil {
			return nil, "", err
		}
		data, version = secret.Data, secret.ResourceVersion
	case kindConfigMap:
		configMap, err := getConfigMap(ctx, c, namespace, ref.Name, field)
		if err != nil {
			return nil, "", err
		}
		data, version = configMapData(configMap), configMap.ResourceVersion
	default:
		// The CRD's enum refuses other kinds; this guards a stale schema.
		return nil, "", fmt.Errorf("%w: %s.kind %q must be Secret or ConfigMap", ErrInvalidCredentials, field, kind)
	}
	knownHosts := data[key]
	if len(knownHosts) == 0 {
		return nil, "", &MissingReferenceError{Kind: kind, Namespace: namespace, Name: ref.Name, Key: key, Field: field}
	}
	return knownHosts, version, nil
}

func getConfigMap(ctx context.Context, c client.Reader, namespace, name, field string) (*corev1.ConfigMap, error) {
	configMap := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, configMap); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &MissingReferenceError{Kind: kindConfigMap, Namespace: namespace, Name: name, Field: field}
		}
		return nil, fmt.Errorf("reading ConfigMap %s/%s (%s): %w", namespace, name, field, err)
	}
	return configMap, nil
}

// configMapData merges a ConfigMap's text and binary data, since
// known_hosts may have been stored either way.
func configMapData(configMap *corev1.ConfigMap) map[string][]byte {
	data := make(map[string][]byte, len(configMap.Data)+len(configMap.BinaryData))
	for key, value := range configMap.BinaryData {
		data[key] = value
	}
	for key, value := range configMap.Data {
		data[key] = []byte(value)
	}
	return data
}
