package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/wspec/wspec/runtime"
	"github.com/wspec/wspec/runtime/webgpu"
)

func runDevices(args []string) error {
	fs := pflag.NewFlagSet("devices", pflag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ads, err := runtime.ListAdapters()
	if err != nil {
		return err
	}
	if *asJSON {
		var infos []webgpu.AdapterInfo
		for _, a := range ads {
			infos = append(infos, a.Info)
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(infos)
	}
	path, gen := webgpu.Loaded()
	fmt.Printf("library %s (%s)\n", path, gen)
	for i, a := range ads {
		in := a.Info
		l := in.Limits
		fmt.Printf("\n[%d] %s\n", i, in.Name())
		fmt.Printf("    backend %s, type %s, vendor %q (0x%04x), device 0x%04x, architecture %q\n", in.BackendName, in.TypeName, in.Vendor, in.VendorID, in.DeviceID, in.Architecture)
		fmt.Printf("    driver: %s\n", in.Description)
		fmt.Printf("    subgroup size %d..%d\n", in.SubgroupMin, in.SubgroupMax)
		fmt.Printf("    features: %s\n", strings.Join(in.Features, ", "))
		fmt.Printf("    max storage binding %d MiB, max buffer %d MiB, %d storage buffers/stage\n",
			l.MaxStorageBufferBindingSize>>20, l.MaxBufferSize>>20, l.MaxStorageBuffersPerShaderStage)
		fmt.Printf("    workgroup storage %d KiB, %d invocations/workgroup, %d workgroups/dimension\n",
			l.MaxComputeWorkgroupStorageSize>>10, l.MaxComputeInvocationsPerWorkgroup, l.MaxComputeWorkgroupsPerDimension)
	}
	return nil
}
