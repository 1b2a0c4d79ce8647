{{/* The batch scheduler's rules, granted as KubeRay v1.7's chart grants them: only for the
scheduler installed (src/rayop/controllers/batchscheduler/rbac.py; checked by
tests/controllers/batchscheduler/test_rbac.py). */}}
{{- define "rayop.kubernetesWASEnabled" -}}
{{- range .Values.featureGates -}}
{{- if and (eq .name "KubernetesWAS") .enabled -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "rayop.batchSchedulerRules" -}}
{{- $name := .Values.batchScheduler.name -}}
{{- $legacy := .Values.batchScheduler.enabled -}}
{{- if include "rayop.kubernetesWASEnabled" . }}
# batch scheduler: kubernetes-was
- apiGroups:
  - scheduling.k8s.io
  resources:
  - podgroups
  - workloads
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - update
  - watch
{{- end -}}
{{- if or $legacy (eq $name "volcano") }}
# batch scheduler: volcano
- apiGroups:
  - scheduling.volcano.sh
  resources:
  - podgroups
  verbs:
  - create
  - delete
  - get
  - list
  - update
  - watch
{{- end -}}
{{- if or $legacy (eq $name "scheduler-plugins") }}
# batch scheduler: scheduler-plugins
- apiGroups:
  - scheduling.x-k8s.io
  resources:
  - podgroups
  verbs:
  - create
  - get
  - list
  - watch
{{- end -}}
{{- end -}}
