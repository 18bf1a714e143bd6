package watch

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"
)

// NewDynamicClient is dynamic.NewForConfig with a watch decoder that parses
// each JSON event once. client-go's decoder passes over every byte of a
// watch event about ten times: the frame is cut out, its apiVersion and
// kind are looked up with a parse of the whole frame (a watch event has
// neither), the frame is parsed into a WatchEvent, the object's apiVersion
// and kind are looked up with another parse, and the object is parsed
// twice more (into the Unstructured, which parses it into its map), each
// parse after a validity scan. This one cuts the frame, parses the event
// and parses the object: about five passes. A replay of 50,000 ConfigMaps
// spent about 3 s of its 10 s of CPU in client-go's, on the operator's
// critical path to Ready. The result is the same: the same map (integers
// as int64, as client-go's unstructured decoder gives them) and the same
// errors, which come from client-go's decoder itself for anything but a
// plain object (a Status, a list, a frame without a kind).
func NewDynamicClient(cfg *rest.Config) (*dynamic.DynamicClient, error) {
	config := dynamic.ConfigFor(cfg)
	config.NegotiatedSerializer = onePassSerializer{NegotiatedSerializer: config.NegotiatedSerializer}
	// As dynamic.NewForConfigAndClient: the resource's own path is built
	// per request.
	config.GroupVersion = nil
	config.APIPath = "/if-you-see-this-search-for-the-break"
	restClient, err := rest.UnversionedRESTClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	return dynamic.New(restClient), nil
}

// onePassSerializer is the dynamic client's serializer with the JSON
// watch path replaced: events and their objects are decoded by
// eventDecoder and objectDecoder, everything else as before.
type onePassSerializer struct {
	runtime.NegotiatedSerializer
}

func (s onePassSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := append([]runtime.SerializerInfo(nil), s.NegotiatedSerializer.SupportedMediaTypes()...)
	for i, info := range infos {
		if info.MediaType != runtime.ContentTypeJSON || info.StreamSerializer == nil {
			continue
		}
		stream := *info.StreamSerializer
		stream.Serializer = eventDecoder{Serializer: stream.Serializer}
		infos[i].StreamSerializer = &stream
	}
	return infos
}

// DecoderToVersion is the decoder of a watch event's object (and of a
// response's body): objectDecoder in front of the dynamic client's own.
func (s onePassSerializer) DecoderToVersion(decoder runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return objectDecoder{fallback: s.NegotiatedSerializer.DecoderToVersion(decoder, gv)}
}

// eventDecoder decodes a JSON watch frame into a WatchEvent with one parse
// (the object stays raw, as before). client-go's serializer first parsed
// the whole frame for an apiVersion and kind a watch event does not have.
type eventDecoder struct {
	runtime.Serializer
}

var watchEventKind = metav1.SchemeGroupVersion.WithKind("WatchEvent")

func (d eventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	event, ok := into.(*metav1.WatchEvent)
	if !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, event); err != nil {
		return nil, nil, fmt.Errorf("decoding a watch event: %w", err)
	}
	gvk := watchEventKind
	return event, &gvk, nil
}

// objectDecoder decodes a plain object (apiVersion and kind set, not a
// list, not a kind the client decodes to a typed object such as Status)
// into an Unstructured with one parse; any other input, or a decode into a
// given object, goes to fallback, the dynamic client's own decoder.
type objectDecoder struct {
	fallback runtime.Decoder
}

// typed reports whether the dynamic client's decoder turns gvk into a
// typed object rather than an Unstructured: its scheme holds metav1's
// kinds in version v1, and the unversioned ones (Status among them) in
// every group and version.
func typed(gvk schema.GroupVersionKind) bool {
	return typedKinds.Recognizes(gvk) || unversionedKinds[gvk.Kind]
}

var typedKinds = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

var unversionedKinds = func() map[string]bool {
	kinds := map[string]bool{}
	for gvk := range typedKinds.AllKnownTypes() {
		// New finds an unversioned kind under any group and version.
		if _, err := typedKinds.New(schema.GroupVersionKind{Group: "unversioned.invalid", Version: "v0", Kind: gvk.Kind}); err == nil {
			kinds[gvk.Kind] = true
		}
	}
	return kinds
}()

func (d objectDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil {
		return d.fallback.Decode(data, defaults, into)
	}
	var content map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &content); err != nil || content == nil {
		return d.fallback.Decode(data, defaults, into) // its error, as before
	}
	obj := &unstructured.Unstructured{Object: content}
	gvk := obj.GroupVersionKind()
	_, isList := content["items"]
	if gvk.Kind == "" || gvk.Version == "" || isList || typed(gvk) {
		return d.fallback.Decode(data, defaults, into)
	}
	return obj, &gvk, nil
}
