// Package deploy holds wspec's deployment (see docs/scaling-out.md) and its tests, in a Go
// module of its own so that Helm's and Kubernetes' libraries stay out of the server's build:
//
//   - image/build.sh builds the container image from Debian packages and this repository
//     (TestImageServes, build tag image, runs its root file system and asks it for a completion);
//   - chart/wspec is the Helm chart of the model servers, and chart/inferencepool-values.yaml
//     configures the Gateway API Inference Extension's own inferencepool chart (an InferencePool
//     and its endpoint picker) to route to them. The chart tests render both with Helm's engine
//     and validate every object: Kubernetes' own types decoded strictly, the InferencePool
//     against the extension's CRD schema (OpenAPI, CEL rules and unknown fields, as the API
//     server does), the endpoint picker's configuration by the picker's own loader.
//
// CI runs `go test ./...` and `go test -tags image -run TestImageServes` here (.ci/run).
package deploy
