{{/* vim: set filetype=mustache: */}}

{{/*
The Prometheus job of the API pods: the release's full name, carried by the Service label
conveyor.dev/metrics-job that the ServiceMonitor takes the job from. Per release, so two releases' series never
merge; a release named conveyor keeps the job names of deploy/prometheus/conveyor-rules.yaml.
*/}}
{{- define "conveyor.metricsJob" -}}
{{- include "conveyor.fullname" . -}}
{{- end -}}

{{/* The controller's job: <fullname>-controller (the dashboard's Controller row and the controller alerts). */}}
{{- define "conveyor.controller.metricsJob" -}}
{{- include "conveyor.controller.fullname" . -}}
{{- end -}}

{{/*
A name as an RE2 pattern inside a PromQL double-quoted string: metacharacters escaped, then the backslashes
doubled because PromQL strings take escapes of their own (a release name may contain dots).
*/}}
{{- define "conveyor.rules.regex" -}}
{{- regexQuoteMeta . | replace "\\" "\\\\" -}}
{{- end -}}

{{/* A threshold in seconds as the alert descriptions word it: 900 -> "15 minutes", 10800 -> "3 hours". */}}
{{- define "conveyor.rules.duration" -}}
{{- $s := int . -}}
{{- if and (ge $s 3600) (eq (mod $s 3600) 0) -}}
{{- div $s 3600 }} hour{{ if ne $s 3600 }}s{{ end -}}
{{- else if and (ge $s 60) (eq (mod $s 60) 0) -}}
{{- div $s 60 }} minute{{ if ne $s 60 }}s{{ end -}}
{{- else -}}
{{- $s }} second{{ if ne $s 1 }}s{{ end -}}
{{- end -}}
{{- end -}}
