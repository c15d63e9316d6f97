package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestChartsRenderValidObjects renders the wspec chart and the extension's inferencepool chart
// with this repository's values, validates every object, and checks that they fit together:
// the pool selects the Deployment's pods on the server's port, the picker starts with the
// configuration the chart renders and its own loader accepts it, and a pod drains within its
// grace period.
func TestChartsRenderValidObjects(t *testing.T) {
	v := newValidator(t, extensionCRDs(t)...)
	servers := renderValid(t, v, wspecRelease(t, nil))
	pool := renderValid(t, v, poolRelease(t, nil))

	for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget"} {
		if len(servers[kind]) != 1 {
			t.Errorf("the wspec chart made %d %s objects, want 1", len(servers[kind]), kind)
		}
	}
	if len(pool["InferencePool"]) != 1 || len(pool["ConfigMap"]) == 0 || len(pool["Deployment"]) != 1 {
		t.Fatalf("the inferencepool chart made %d pools, %d config maps, %d deployments",
			len(pool["InferencePool"]), len(pool["ConfigMap"]), len(pool["Deployment"]))
	}
	dep := servers["Deployment"][0]
	podLabels := get(dep, "spec", "template", "metadata", "labels").(map[string]any)
	container := get(dep, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	port := get(container, "ports").([]any)[0].(map[string]any)["containerPort"]

	// the pool selects exactly these pods, on the server's port
	ip := pool["InferencePool"][0]
	selector := get(ip, "spec", "selector", "matchLabels").(map[string]any)
	for k, want := range selector {
		if podLabels[k] != want {
			t.Errorf("the InferencePool selects %s=%v; the wspec pods have %s=%v", k, want, k, podLabels[k])
		}
	}
	if got := get(ip, "spec", "targetPorts").([]any)[0].(map[string]any)["number"]; fmt.Sprint(got) != fmt.Sprint(port) {
		t.Errorf("the InferencePool targets port %v; wspec listens on %v", got, port)
	}

	// readiness on /health (503 while draining); the grace period covers the drain
	if p := get(container, "readinessProbe", "httpGet", "path"); p != "/health" {
		t.Errorf("readiness probe on %v, want /health", p)
	}
	grace := toInt(get(dep, "spec", "template", "spec", "terminationGracePeriodSeconds"))
	sleep := toInt(get(container, "lifecycle", "preStop", "sleep", "seconds"))
	drain := flagValue(t, container, "--shutdown-timeout")
	if grace <= sleep+toInt(drain) {
		t.Errorf("terminationGracePeriodSeconds %d does not cover the preStop sleep %d and --shutdown-timeout %s", grace, sleep, drain)
	}
	if sc := get(container, "securityContext", "readOnlyRootFilesystem"); sc != true {
		t.Errorf("the container's root file system is writable")
	}

	// the picker starts with the configuration the chart renders, and its own loader accepts it
	epp := pool["Deployment"][0]
	args := strings.Join(toStrings(get(epp, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["args"]), " ")
	const configFile = "default-plugins.yaml"
	if !strings.Contains(args, configFile) {
		t.Errorf("the endpoint picker is not started with %s: %s", configFile, args)
	}
	var config string
	for _, cm := range pool["ConfigMap"] {
		if s, ok := get(cm, "data").(map[string]any)[configFile].(string); ok {
			config = s
		}
	}
	if config == "" {
		t.Fatalf("no ConfigMap holds %s", configFile)
	}
	if err := loadPickerConfig([]byte(config)); err != nil {
		t.Fatal(err)
	}
}

// TestChartVariants renders the choices a user makes (autoscaling, a GPU, an API key, extra
// flags) and checks each object is valid and says what was asked.
func TestChartVariants(t *testing.T) {
	v := newValidator(t)
	objs := renderValid(t, v, wspecRelease(t, map[string]any{
		"autoscaling": map[string]any{"enabled": true, "maxReplicas": 4},
		"gpu":         map[string]any{"resource": "nvidia.com/gpu"},
		"server": map[string]any{
			"apiKeySecret": map[string]any{"name": "wspec-key"},
			"extraArgs":    []any{"--max-num-seqs=8"},
		},
		"model": map[string]any{"path": "Llama-3.2-1B-Instruct-Q4_K_M.gguf"},
	}))
	if len(objs["HorizontalPodAutoscaler"]) != 1 {
		t.Fatalf("autoscaling on: %d HorizontalPodAutoscalers", len(objs["HorizontalPodAutoscaler"]))
	}
	hpa := objs["HorizontalPodAutoscaler"][0]
	if m := get(hpa, "spec", "metrics").([]any)[0].(map[string]any); get(m, "pods", "metric", "name") != "vllm:num_requests_waiting" {
		t.Errorf("the autoscaler reads %v", m)
	}
	dep := objs["Deployment"][0]
	if r := get(dep, "spec", "replicas"); r != nil {
		t.Errorf("the Deployment sets replicas %v while autoscaled", r)
	}
	c := get(dep, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	if n := get(c, "resources", "limits", "nvidia.com/gpu"); toInt(n) != 1 {
		t.Errorf("GPU limit %v, want 1", n)
	}
	if get(c, "resources", "limits", "memory") != "8Gi" {
		t.Errorf("the GPU replaced the memory limit: %v", get(c, "resources", "limits"))
	}
	env := get(c, "env").([]any)[0].(map[string]any)
	if env["name"] != "WSPEC_API_KEY" || get(env, "valueFrom", "secretKeyRef", "name") != "wspec-key" {
		t.Errorf("API key env %v", env)
	}
	args := toStrings(c["args"])
	if !slices.Contains(args, "--max-num-seqs=8") || !slices.Contains(args, "--model=/var/lib/wspec/models/Llama-3.2-1B-Instruct-Q4_K_M.gguf") {
		t.Errorf("args %q", args)
	}
}

// TestChartRefusesBrokenValues: a typo or an out-of-range value fails, either against the
// chart's values schema (at helm install) or against the objects' schemas (as applying them
// would): the wspec chart's own values, and the inferencepool chart's with this repository's.
func TestChartRefusesBrokenValues(t *testing.T) {
	v := newValidator(t, extensionCRDs(t)...)
	cases := []struct {
		name      string
		release   release
		wantError string
	}{
		{"a misspelt key", wspecRelease(t, map[string]any{"replica": 3}), "replica"},
		{"replicas as a word", wspecRelease(t, map[string]any{"replicas": "three"}), "replicas"},
		{"an unknown service type", wspecRelease(t, map[string]any{"service": map[string]any{"type": "Loadbalancer"}}), "/service/type"},
		{"a port out of range", wspecRelease(t, map[string]any{"server": map[string]any{"port": 80000}}), "port"},
		{"a memory limit that is no quantity", wspecRelease(t, map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "lots"}}}), "quantities must match"},
		{"a misspelt volume field", wspecRelease(t, map[string]any{"model": map[string]any{"volume": map[string]any{"persistentVolumeClaim": map[string]any{"claimNme": "m"}}}}), "claimNme"},
		{"an absolute model path", wspecRelease(t, map[string]any{"model": map[string]any{"path": "/models/x"}}), "/model/path"},
		{"a pool port out of range", poolRelease(t, map[string]any{"inferencePool": map[string]any{"targetPorts": []any{map[string]any{"number": 70000}}}}), "targetPorts"},
		{"an unknown failure mode", poolRelease(t, map[string]any{"inferenceExtension": map[string]any{"failureMode": "FailSometimes"}}), "failureMode"},
		{"two equal pool ports", poolRelease(t, map[string]any{"inferencePool": map[string]any{"targetPorts": []any{map[string]any{"number": 8000}, map[string]any{"number": 8000}}}}), "port number must be unique"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			manifests, err := c.release.render()
			if err == nil {
				_, err = v.validateAll(manifests)
			}
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), c.wantError) {
				t.Fatalf("error does not mention %q: %v", c.wantError, err)
			}
		})
	}
}

func renderValid(t *testing.T, v *validator, r release) map[string][]map[string]any {
	t.Helper()
	manifests, err := r.render()
	if err != nil {
		t.Fatalf("render %s: %v", r.chart, err)
	}
	objs, err := v.validateAll(manifests)
	if err != nil {
		t.Fatalf("%s: %v", r.chart, err)
	}
	return objs
}

// get walks nested maps; nil when a key is absent.
func get(obj any, path ...string) any {
	for _, k := range path {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil
		}
		obj = m[k]
	}
	return obj
}

func toInt(v any) int {
	var n int
	if _, err := fmt.Sscan(fmt.Sprint(v), &n); err != nil {
		return -1
	}
	return n
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// flagValue is the value of --name=value among the container's args.
func flagValue(t *testing.T, container map[string]any, name string) string {
	t.Helper()
	for _, a := range toStrings(container["args"]) {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s in %v", name, container["args"])
	return ""
}
