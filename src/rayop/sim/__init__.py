"""An embedded Kubernetes-compatible control plane: API server, simulated scheduler, kubelet
and Ray dashboard, fault injection and an audit. It never imports the operator."""
