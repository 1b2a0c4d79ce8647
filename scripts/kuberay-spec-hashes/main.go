// Command kuberay-spec-hashes prints KubeRay v1.7.0's RayCluster spec hash of each input line,
// computed by KubeRay's own utils.GenerateHashWithoutReplicasAndWorkersToDelete. It is built
// inside KubeRay's unpacked source by scripts/gen-kuberay-spec-hashes (never in this module).
//
// Input, one JSON object a line: {"mode": "cluster" | "service", "spec": <RayClusterSpec>}.
// "cluster" defaults nil rayStartParams to {} as KubeRay's RayCluster controller does before it
// hashes; "service" mutes suspend as its RayService controller does.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
)

type input struct {
	Mode string          `json:"mode"`
	Spec json.RawMessage `json:"spec"`
}

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<24), 1<<24)
	for sc.Scan() {
		var in input
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			panic(err)
		}
		var spec rayv1.RayClusterSpec
		if err := json.Unmarshal(in.Spec, &spec); err != nil {
			panic(err)
		}
		if in.Mode == "service" {
			spec.Suspend = nil
		} else {
			if spec.HeadGroupSpec.RayStartParams == nil {
				spec.HeadGroupSpec.RayStartParams = map[string]string{}
			}
			for i := range spec.WorkerGroupSpecs {
				if spec.WorkerGroupSpecs[i].RayStartParams == nil {
					spec.WorkerGroupSpecs[i].RayStartParams = map[string]string{}
				}
			}
		}
		h, err := utils.GenerateHashWithoutReplicasAndWorkersToDelete(spec)
		if err != nil {
			panic(err)
		}
		fmt.Println(h)
	}
}
