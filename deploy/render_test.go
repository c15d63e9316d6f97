package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"
)

// release is one `helm template`: a chart folder, its local dependencies (file://), the
// release's name and namespace, and values as `-f` files then `--set` would give them.
type release struct {
	chart     string
	deps      []string
	name, ns  string
	files     []string
	overrides map[string]any
}

// render does what `helm template` does: load the chart and its dependencies, merge the
// values, check them against the chart's values.schema.json, render the templates.
func (r release) render() (map[string]string, error) {
	c, err := loader.Load(r.chart)
	if err != nil {
		return nil, err
	}
	for _, d := range r.deps {
		dep, err := loader.Load(d)
		if err != nil {
			return nil, err
		}
		c.AddDependency(dep)
	}
	vals := map[string]any{}
	for _, f := range r.files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var v map[string]any
		if err := yaml.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		vals = commonutil.MergeTables(v, vals)
	}
	if r.overrides != nil {
		vals = commonutil.MergeTables(r.overrides, vals)
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return nil, err
	}
	opts := common.ReleaseOptions{Name: r.name, Namespace: r.ns, Revision: 1, IsInstall: true}
	caps := common.DefaultCapabilities.Copy()
	rv, err := commonutil.ToRenderValuesWithSchemaValidation(c, vals, opts, caps, false)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, rv)
}

// wspecRelease is the chart of this repository as the docs install it.
func wspecRelease(t *testing.T, overrides map[string]any) release {
	return release{chart: filepath.Join(repoRoot(t), "deploy", "chart", "wspec"), name: "wspec", ns: "inference", overrides: overrides}
}

// poolRelease is the extension's own inferencepool chart (with its epplib dependency) and this
// repository's values for it.
func poolRelease(t *testing.T, overrides map[string]any) release {
	charts := filepath.Join(extensionDir(t), "config", "charts")
	return release{
		chart: filepath.Join(charts, "inferencepool"), deps: []string{filepath.Join(charts, "epplib")},
		name: "wspec-pool", ns: "inference",
		files:     []string{filepath.Join(repoRoot(t), "deploy", "chart", "inferencepool-values.yaml")},
		overrides: overrides,
	}
}
