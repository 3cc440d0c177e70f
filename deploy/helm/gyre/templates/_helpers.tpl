{{/* The chart's name, or nameOverride. */}}
{{- define "gyre.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The name of every object: the release name, with the chart's name
unless the release name has it already. */}}
{{- define "gyre.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "gyre.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gyre.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gyre.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gyre.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gyre.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The port that serves the API, metrics and health. */}}
{{- define "gyre.internalPortName" -}}
{{- if .Values.service.internalPort }}internal{{ else }}http{{ end }}
{{- end }}

{{/* The config keys the chart decides, as a JSON object: the pod spec's
ports, probes and grace period depend on them. */}}
{{- define "gyre.managedConfig" -}}
{{- $c := dict
  "http_server" (dict "port" (int .Values.service.port) "internal_port" (int .Values.service.internalPort))
  "health" (dict "enabled" true "handler_prefix" (include "gyre.healthPath" .))
  "prometheus" (dict "enabled" .Values.metrics.enabled "handler_prefix" (include "gyre.metricsPath" .))
  "shutdown" (dict "timeout" (printf "%ds" (int .Values.shutdown.timeoutSeconds))) }}
{{- if eq .Values.engine.type "redis" }}
{{- $_ := set $c "engine" (dict "type" "redis" "redis" (include "gyre.redisConfig" . | fromJson)) }}
{{- else if ne .Values.engine.type "memory" }}
{{- fail (printf "engine.type %q: memory or redis" .Values.engine.type) }}
{{- end }}
{{- toJson $c }}
{{- end }}

{{/* The paths of health and metrics: config.values may move them. */}}
{{- define "gyre.healthPath" -}}
{{- dig "health" "handler_prefix" "/health" (.Values.config.values | default dict) }}
{{- end }}
{{- define "gyre.metricsPath" -}}
{{- dig "prometheus" "handler_prefix" "/metrics" (.Values.config.values | default dict) }}
{{- end }}

{{/* engine.redis of the config, from the engine.redis values that are set. */}}
{{- define "gyre.redisConfig" -}}
{{- $r := .Values.engine.redis }}
{{- $out := dict }}
{{- with $r.address }}{{ $_ := set $out "address" . }}{{ end }}
{{- with $r.clusterAddress }}{{ $_ := set $out "cluster_address" . }}{{ end }}
{{- with $r.sentinelAddress }}{{ $_ := set $out "sentinel_address" . }}{{ end }}
{{- with $r.sentinelMasterName }}{{ $_ := set $out "sentinel_master_name" . }}{{ end }}
{{- with $r.prefix }}{{ $_ := set $out "prefix" . }}{{ end }}
{{- if not (or $r.address $r.clusterAddress $r.sentinelAddress) }}
{{- fail "engine.type redis: set engine.redis.address, clusterAddress or sentinelAddress" }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* The config file the chart renders: config.values under the keys the
chart decides. */}}
{{- define "gyre.config" -}}
{{- $c := mustMergeOverwrite (deepCopy (.Values.config.values | default dict)) (include "gyre.managedConfig" . | fromJson) }}
{{- toPrettyJson $c }}
{{- end }}

{{/* With an existing Secret, the keys the chart decides as command-line
flags, which win over the file. */}}
{{- define "gyre.managedFlags" -}}
{{- $c := include "gyre.managedConfig" . | fromJson }}
- {{ printf "--http_server.port=%v" $c.http_server.port | quote }}
- {{ printf "--http_server.internal_port=%v" $c.http_server.internal_port | quote }}
- "--health.enabled=true"
- {{ printf "--health.handler_prefix=%s" $c.health.handler_prefix | quote }}
- {{ printf "--prometheus.enabled=%v" $c.prometheus.enabled | quote }}
- {{ printf "--prometheus.handler_prefix=%s" $c.prometheus.handler_prefix | quote }}
- {{ printf "--shutdown.timeout=%s" $c.shutdown.timeout | quote }}
{{- with $c.engine }}
- "--engine.type=redis"
{{- range $key, $value := .redis }}
- {{ printf "--engine.redis.%s=%s" $key (ternary (toJson $value) (toString $value) (kindIs "slice" $value)) | quote }}
{{- end }}
{{- end }}
{{- end }}
