package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	"sigs.k8s.io/yaml"
)

// validator checks a rendered object the way applying it would: a kind of Kubernetes' own is
// decoded strictly into its Go type (an unknown or duplicated field, or a value of the wrong
// type, is an error, as kubectl's strict field validation); a custom resource is checked against
// its CRD's schema as the API server checks it (unknown fields, the OpenAPI schema, the CEL
// rules), then decoded strictly into the extension's own Go type.
type validator struct {
	decoder runtime.Decoder
	crds    map[schema.GroupVersionKind]*crdVersion
}

type crdVersion struct {
	structural *structuralschema.Structural
	schema     validation.SchemaValidator
	cel        *cel.Validator
}

func newValidator(t *testing.T, crdFiles ...string) *validator {
	t.Helper()
	sch := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	if err := inferencev1.Install(sch); err != nil {
		t.Fatal(err)
	}
	v := &validator{
		decoder: serializer.NewCodecFactory(sch, serializer.EnableStrict).UniversalDeserializer(),
		crds:    map[schema.GroupVersionKind]*crdVersion{},
	}
	for _, f := range crdFiles {
		v.addCRD(t, f)
	}
	return v
}

func (v *validator) addCRD(t *testing.T, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, ver := range crd.Spec.Versions {
		if ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
			t.Fatalf("%s %s: no schema", file, ver.Name)
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(ver.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			t.Fatalf("%s %s: %v", file, ver.Name, err)
		}
		structural, err := structuralschema.NewStructural(&internal)
		if err != nil {
			t.Fatalf("%s %s: %v", file, ver.Name, err)
		}
		sv, _, err := validation.NewSchemaValidator(&internal)
		if err != nil {
			t.Fatalf("%s %s: %v", file, ver.Name, err)
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind}
		v.crds[gvk] = &crdVersion{structural, sv, cel.NewValidator(structural, true, celconfig.PerCallLimit)}
	}
}

// validate checks one YAML document and returns its kind.
func (v *validator) validate(doc []byte) (string, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return "", err
	}
	// as the API server reads a body: integral numbers as int64 (CEL tells them from floats)
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return "", err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" {
		return kind, fmt.Errorf("apiVersion %q, kind %q: %v", apiVersion, kind, err)
	}
	gvk := gv.WithKind(kind)
	var errs []string
	if crd, ok := v.crds[gvk]; ok {
		var copied map[string]any
		_ = utiljson.Unmarshal(js, &copied)
		opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
		for _, p := range pruning.PruneWithOptions(copied, crd.structural, true, opts) {
			errs = append(errs, "unknown field "+p)
		}
		for _, e := range validation.ValidateCustomResource(nil, obj, crd.schema) {
			errs = append(errs, e.Error())
		}
		celErrs, _ := crd.cel.Validate(context.Background(), nil, crd.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		for _, e := range celErrs {
			errs = append(errs, e.Error())
		}
	}
	if _, _, err := v.decoder.Decode(js, nil, nil); err != nil {
		if runtime.IsNotRegisteredError(err) {
			return kind, fmt.Errorf("%s: no schema to validate it against", gvk)
		}
		errs = append(errs, err.Error())
	}
	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name == "" {
		errs = append(errs, "metadata.name is empty")
	}
	if len(errs) > 0 {
		return kind, fmt.Errorf("%s %v: %s", kind, meta["name"], strings.Join(errs, "; "))
	}
	return kind, nil
}

// documents splits rendered manifests into their YAML documents, dropping empty ones.
func documents(manifests map[string]string) map[string][][]byte {
	out := map[string][][]byte{}
	for name, text := range manifests {
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") {
			continue
		}
		for _, doc := range bytes.Split([]byte(text), []byte("\n---")) {
			doc = bytes.TrimPrefix(bytes.TrimSpace(doc), []byte("---"))
			if len(bytes.TrimSpace(stripComments(doc))) > 0 {
				out[name] = append(out[name], doc)
			}
		}
	}
	return out
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// validateAll validates every document and returns the objects by kind (as generic maps).
func (v *validator) validateAll(manifests map[string]string) (map[string][]map[string]any, error) {
	byKind := map[string][]map[string]any{}
	var errs []error
	for file, docs := range documents(manifests) {
		for _, doc := range docs {
			kind, err := v.validate(doc)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", file, err))
				continue
			}
			var obj map[string]any
			_ = yaml.Unmarshal(doc, &obj)
			byKind[kind] = append(byKind[kind], obj)
		}
	}
	return byKind, errors.Join(errs...)
}

// extensionCRDs are the extension's CRD files.
func extensionCRDs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(extensionDir(t), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in the inference extension's module: %v", err)
	}
	return files
}
