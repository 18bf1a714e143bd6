package facts

import (
	"encoding/json"
	"errors"
	"fmt"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// ErrNotEventList is returned by DecodeEventList for well-formed JSON that
// is not an audit.k8s.io/v1 EventList.
var ErrNotEventList = errors.New("not an audit.k8s.io/v1 EventList")

// DecodeEventList parses the body the API server's audit webhook backend
// posts: an audit.k8s.io/v1 EventList in JSON. It returns the events
// (non-nil, possibly empty) or an error, never both; an error wraps
// ErrNotEventList when the JSON is well formed but names another kind or
// version, so a caller can tell a wrong payload from a broken one.
func DecodeEventList(body []byte) ([]auditv1.Event, error) {
	var list auditv1.EventList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding the audit EventList: %w", err)
	}
	if list.APIVersion != auditv1.SchemeGroupVersion.String() || list.Kind != "EventList" {
		return nil, fmt.Errorf("%w: apiVersion %q, kind %q", ErrNotEventList, list.APIVersion, list.Kind)
	}
	if list.Items == nil {
		list.Items = []auditv1.Event{}
	}
	return list.Items, nil
}
