package watch

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
)

// decodedEvent is what a watch decoder gave for one frame.
type decodedEvent struct {
	Type   apiwatch.EventType
	Object runtime.Object
	Err    bool
}

// decodeFrames runs frames through the watch decoder client-go builds from
// ns for a JSON response, as rest.Request.Watch does.
func decodeFrames(t *testing.T, ns runtime.NegotiatedSerializer, frames string) []decodedEvent {
	t.Helper()
	objects, events, framer, err := runtime.NewClientNegotiator(ns, schema.GroupVersion{}).StreamDecoder(runtime.ContentTypeJSON, nil)
	require.NoError(t, err)
	d := restwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader([]byte(frames)))), events), objects)
	var out []decodedEvent
	for {
		typ, obj, err := d.Decode()
		if errors.Is(err, io.EOF) {
			return out
		}
		out = append(out, decodedEvent{Type: typ, Object: obj, Err: err != nil})
		if err != nil && obj == nil && typ == "" && len(out) > 20 {
			return out
		}
	}
}

// The one-pass decoder gives, frame by frame, exactly what client-go's
// dynamic client gives: the same objects (int64 and float64 as its
// unstructured decoder chooses them, a Status as a typed object) and an
// error where it fails.
func TestOnePassDecoderMatchesTheDynamicClients(t *testing.T) {
	stock := dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
	frames := []string{
		`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","resourceVersion":"12","labels":{"x":"y"}},"data":{"k":"v\n\u00e9"}}}`,
		`{"type":"MODIFIED","object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","generation":3},"spec":{"replicas":2,"ratio":0.5,"big":12345678901234567890,"neg":-7,"exp":1e3,"list":[1,"a",null,true,{"z":1.0}]}}}`,
		`{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"99","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"ERROR","object":{"apiVersion":"v1","kind":"Status","status":"Failure","message":"too old resource version","reason":"Expired","code":410}}`,
		`{"type":"DELETED","object":{"apiVersion":"example.com/v1","kind":"Status","metadata":{"name":"custom-kind-named-status"}}}`,
		`{"type":"ADDED","object":{"apiVersion":"v1","kind":"List","items":[]}}`,
		`{"type":"ADDED","object":{"metadata":{"name":"no-kind"}}}`,
		`{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"no-version"}}}`,
		`{"type":"ADDED","object":null}`,
		`{"type":"SOMETHING","object":{"apiVersion":"v1","kind":"ConfigMap"}}`,
	}
	for _, frame := range frames {
		want := decodeFrames(t, stock, frame)
		got := decodeFrames(t, onePassSerializer{NegotiatedSerializer: stock}, frame)
		require.Equal(t, want, got, frame)
	}
	// And as one stream, the frames back to back.
	var all string
	for _, frame := range frames[:4] {
		all += frame + "\n"
	}
	require.Equal(t, decodeFrames(t, stock, all), decodeFrames(t, onePassSerializer{NegotiatedSerializer: stock}, all))
}

// BenchmarkWatchDecode decodes a replay's worth of ConfigMap events (1,000
// frames) with client-go's dynamic decoder and with the one-pass one.
func BenchmarkWatchDecode(b *testing.B) {
	var frames bytes.Buffer
	for i := range 1000 {
		frames.WriteString(`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-`)
		frames.WriteString(string(rune('a'+i%26)) + `","namespace":"scale-00","uid":"0b7e4a0e-1c7e-4a5e-9a3e-0c9f1d2e3f40","resourceVersion":"123456","creationTimestamp":"2026-12-05T00:00:00Z","managedFields":[{"manager":"bench","operation":"Update","apiVersion":"v1","time":"2026-12-05T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:key":{}}}}]},"data":{"key":"value of a configmap mirrored at scale","other":"1234"}}}` + "\n")
	}
	stock := dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
	for _, c := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
	}{{"client-go", stock}, {"one-pass", onePassSerializer{NegotiatedSerializer: stock}}} {
		b.Run(c.name, func(b *testing.B) {
			objects, events, framer, err := runtime.NewClientNegotiator(c.ns, schema.GroupVersion{}).StreamDecoder(runtime.ContentTypeJSON, nil)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				d := restwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader(frames.Bytes()))), events), objects)
				for {
					if _, _, err := d.Decode(); err != nil {
						break
					}
				}
			}
		})
	}
}
