{{/* The app.kubernetes.io/name label: nameOverride, else the chart name. */}}
{{- define "rayop.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The app.kubernetes.io/component label of the operator pod. */}}
{{- define "rayop.component" -}}
{{- default .Chart.Name .Values.componentOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The name of every object: fullnameOverride, else the release name joined to the name
(only the release name when it already holds the name). */}}
{{- define "rayop.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "rayop.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The helm.sh/chart label. */}}
{{- define "rayop.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "rayop.labels" -}}
app.kubernetes.io/name: {{ include "rayop.name" . }}
helm.sh/chart: {{ include "rayop.chart" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels that select the operator pod (the Deployment's and the Service's selector). */}}
{{- define "rayop.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rayop.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The operator's ServiceAccount. */}}
{{- define "rayop.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "rayop.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The --watch-namespace value: watchNamespace joined with commas; with
singleNamespaceInstall and no watchNamespace, the release namespace; else empty (all). */}}
{{- define "rayop.watchNamespace" -}}
{{- if .Values.watchNamespace -}}
{{- join "," .Values.watchNamespace -}}
{{- else if .Values.singleNamespaceInstall -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* featureGates as KubeRay passes them: Name=true,Other=false. */}}
{{- define "rayop.featureGates" -}}
{{- $gates := list -}}
{{- range .Values.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" .name .enabled) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{/* Stops the render, as KubeRay's chart does, on a reconcileConcurrency, kubeClient.qps or
kubeClient.burst of the wrong form; also on KubeRay's operatorCommand, which rayop's image
does not have. */}}
{{- define "rayop.validate" -}}
{{- if hasKey .Values "reconcileConcurrency" -}}
{{- $value := toString .Values.reconcileConcurrency -}}
{{- $configFile := and .Values.configuration .Values.configuration.enabled -}}
{{- if and (eq $value "auto") $configFile -}}
{{- fail "values.reconcileConcurrency auto is a rayop flag: KubeRay's Configuration file (configuration.enabled) holds a number" -}}
{{- else if and (ne $value "auto") (not (regexMatch "^[1-9][0-9]*$" $value)) -}}
{{- fail (printf "values.reconcileConcurrency must be a positive integer, got %q" $value) -}}
{{- end -}}
{{- end -}}
{{- with .Values.kubeClient -}}
{{- if hasKey . "qps" -}}
{{- $value := toString .qps -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?$" $value) -}}
{{- fail (printf "values.kubeClient.qps must be a valid float number, got %q" $value) -}}
{{- end -}}
{{- end -}}
{{- if hasKey . "burst" -}}
{{- $value := toString .burst -}}
{{- if not (regexMatch "^[0-9]+$" $value) -}}
{{- fail (printf "values.kubeClient.burst must be a non-negative integer, got %q" $value) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if eq (toString .Values.operatorCommand) "/manager" -}}
{{- fail "values.operatorCommand /manager is KubeRay's Go binary; rayop's image runs `rayop` (the chart's default)" -}}
{{- end -}}
{{- if and .Values.batchScheduler.enabled .Values.batchScheduler.name -}}
{{- fail "values.batchScheduler: set either enabled (deprecated, volcano) or name, not both" -}}
{{- end -}}
{{- end -}}

{{/* "true" when the replicas run with --sharding: rayop.sharding true, or "auto" (the
default) and more than one replica. */}}
{{- define "rayop.sharding" -}}
{{- $mode := "auto" -}}
{{- if hasKey .Values.rayop "sharding" -}}
{{- $mode = toString .Values.rayop.sharding -}}
{{- end -}}
{{- if or (eq $mode "true") (and (eq $mode "auto") (gt (int (default 1 .Values.replicas)) 1)) -}}
true
{{- else if not (has $mode (list "auto" "true" "false")) -}}
{{- fail (printf "values.rayop.sharding must be auto, true or false, got %q" $mode) -}}
{{- end -}}
{{- end -}}

{{/* The operator's arguments after `run`: KubeRay's flags (or --config) in the order KubeRay's
chart renders them, then rayop's own (flags the Configuration file has no field for). */}}
{{- define "rayop.args" -}}
{{- $args := list -}}
{{- if .Values.configuration.enabled -}}
{{- $args = append $args "--config" -}}
{{- $args = append $args "/etc/kuberay/config.yaml" -}}
{{- else -}}
{{- if .Values.batchScheduler.enabled -}}
{{- $args = append $args "--enable-batch-scheduler" -}}
{{- end -}}
{{- with .Values.batchScheduler.name -}}
{{- $args = append $args (printf "--batch-scheduler=%s" .) -}}
{{- end -}}
{{- with include "rayop.watchNamespace" . -}}
{{- $args = append $args "--watch-namespace" -}}
{{- $args = append $args . -}}
{{- end -}}
{{- if and .Values.logging.baseDir .Values.logging.fileName -}}
{{- $args = append $args "--log-file-path" -}}
{{- $args = append $args (printf "%s/%s" .Values.logging.baseDir .Values.logging.fileName) -}}
{{- end -}}
{{- with .Values.logging.stdoutEncoder -}}
{{- $args = append $args "--log-stdout-encoder" -}}
{{- $args = append $args . -}}
{{- end -}}
{{- with .Values.logging.fileEncoder -}}
{{- $args = append $args "--log-file-encoder" -}}
{{- $args = append $args . -}}
{{- end -}}
{{- if hasKey .Values "useKubernetesProxy" -}}
{{- $args = append $args (printf "--use-kubernetes-proxy=%t" .Values.useKubernetesProxy) -}}
{{- end -}}
{{- if hasKey .Values "leaderElectionEnabled" -}}
{{- $args = append $args (printf "--enable-leader-election=%t" .Values.leaderElectionEnabled) -}}
{{- end -}}
{{- if hasKey .Values.metrics "enabled" -}}
{{- $args = append $args (printf "--enable-metrics=%t" .Values.metrics.enabled) -}}
{{- end -}}
{{- if hasKey .Values "reconcileConcurrency" -}}
{{- $args = append $args (printf "--reconcile-concurrency=%v" .Values.reconcileConcurrency) -}}
{{- end -}}
{{- if hasKey .Values.kubeClient "qps" -}}
{{- $args = append $args (printf "--qps=%v" .Values.kubeClient.qps) -}}
{{- end -}}
{{- if hasKey .Values.kubeClient "burst" -}}
{{- $args = append $args (printf "--burst=%v" .Values.kubeClient.burst) -}}
{{- end -}}
{{- end -}}
{{- with include "rayop.featureGates" . -}}
{{- $args = append $args (printf "--feature-gates=%s" .) -}}
{{- end -}}
{{- if not .Values.configuration.enabled -}}
{{- /* With --config the file's probeAddr applies (the ConfigMap renders it). */ -}}
{{- $args = append $args (printf "--health-probe-bind-address=:%v" .Values.rayop.healthProbePort) -}}
{{- end -}}
{{- $args = append $args (printf "--use-priority-queue=%t" .Values.rayop.usePriorityQueue) -}}
{{- $args = append $args (printf "--log-level=%s" .Values.rayop.logLevel) -}}
{{- if ne (float64 .Values.rayop.rayjobDashboardPollInterval) 0.0 -}}
{{- $args = append $args (printf "--rayjob-dashboard-poll-interval=%v" .Values.rayop.rayjobDashboardPollInterval) -}}
{{- end -}}
{{- if .Values.rayop.decisionEvents -}}
{{- $args = append $args "--decision-events=true" -}}
{{- end -}}
{{- if include "rayop.sharding" . -}}
{{- $args = append $args "--sharding=true" -}}
{{- /* Kubernetes expands $(POD_NAME) from the container's env (the downward API). */ -}}
{{- $args = append $args "--replica-id=$(POD_NAME)" -}}
{{- end -}}
{{- range .Values.rayop.extraArgs -}}
{{- $args = append $args (toString .) -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}
