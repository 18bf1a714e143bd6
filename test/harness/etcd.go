package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// CompactEtcd compacts etcd's history up to its current revision, as the
// API server does every few minutes, and restarts kube-apiserver, whose
// watch cache would otherwise still serve the older events: afterwards a
// watch from any earlier resourceVersion is answered 410 (too old). It
// returns the revision compacted to. It speaks etcd's JSON gateway, which
// keeps the harness free of an etcd client.
func (k *Kube) CompactEtcd(ctx context.Context) (int64, error) {
	base := k.env.ControlPlane.Etcd.URL.String()
	var status struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// A range over one key names the current revision in its header.
	if err := etcdCall(ctx, base+"/v3/kv/range", map[string]any{"key": "AA=="}, &status); err != nil {
		return 0, err
	}
	revision, err := strconv.ParseInt(status.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd's revision %q: %w", status.Header.Revision, err)
	}
	if err := etcdCall(ctx, base+"/v3/kv/compaction", map[string]any{"revision": revision, "physical": true}, nil); err != nil {
		return 0, err
	}
	if err := k.StopAPIServer(); err != nil {
		return 0, err
	}
	return revision, k.StartAPIServer()
}

func etcdCall(ctx context.Context, url string, body any, into any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("calling etcd %s: %w", url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s answered %s: %s", url, resp.Status, data)
	}
	if into == nil {
		return nil
	}
	return json.Unmarshal(data, into)
}
