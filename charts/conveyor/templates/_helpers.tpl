{{/* vim: set filetype=mustache: */}}

{{/* Chart name, truncated to 63 characters. */}}
{{- define "conveyor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: <release>-<chart> unless the release name already contains the chart name. */}}
{{- define "conveyor.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* <fullname>-<suffix>, truncated so the suffix survives. */}}
{{- define "conveyor.componentName" -}}
{{- $suffix := .suffix -}}
{{- printf "%s-%s" (include "conveyor.fullname" .ctx | trunc (int (sub 62 (len $suffix))) | trimSuffix "-") $suffix -}}
{{- end -}}

{{/*
<prefix>-<suffix> (<prefix> alone without a suffix) in at most `max` characters, for names Kubernetes limits below
63: a CronJob's (52: its Jobs are named <cronjob>-<11 characters>) and a StatefulSet's (52: its pods carry the label
controller-revision-hash: <statefulset>-<hash of up to 10 characters>, a label value of at most 63). A name that
fits is left as is; a longer one keeps the suffix and replaces the cut end of the prefix with 8 characters of the
whole name's sha256, so two long release names that begin alike still get different names, the same on every render.
{{ include "conveyor.boundedName" (dict "prefix" (include "conveyor.fullname" $) "suffix" "reap-delete" "max" 52) }}
*/}}
{{- define "conveyor.boundedName" -}}
{{- $full := .prefix -}}
{{- if .suffix }}{{ $full = printf "%s-%s" .prefix .suffix }}{{ end -}}
{{- if le (len $full) (int .max) -}}
{{- $full -}}
{{- else -}}
{{- $tail := printf "-%s" ($full | sha256sum | trunc 8) -}}
{{- if .suffix }}{{ $tail = printf "%s-%s" $tail .suffix }}{{ end -}}
{{- printf "%s%s" (.prefix | trunc (int (sub (int .max) (len $tail))) | trimSuffix "-") $tail -}}
{{- end -}}
{{- end -}}

{{- define "conveyor.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of one component: {{ include "conveyor.selectorLabels" (dict "ctx" $ "component" "server") }} */}}
{{- define "conveyor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "conveyor.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{/* Labels of every resource. */}}
{{- define "conveyor.labels" -}}
helm.sh/chart: {{ include "conveyor.chart" .ctx }}
{{ include "conveyor.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: conveyor
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* metadata.annotations of every resource (commonAnnotations plus extra), or nothing; indented for metadata. */}}
{{- define "conveyor.annotations" -}}
{{- $all := merge (dict) (.extra | default dict) (.ctx.Values.commonAnnotations | default dict) -}}
{{- if $all }}
  annotations:
    {{- toYaml $all | nindent 4 }}
{{- end }}
{{- end -}}

{{/* The API pods' component: "server". */}}
{{- define "conveyor.api.component" -}}server{{- end -}}

{{- define "conveyor.image" -}}
{{- $registry := .Values.global.imageRegistry | default .Values.image.registry -}}
{{- $repository := .Values.image.repository -}}
{{- if $registry }}{{ $repository = printf "%s/%s" $registry $repository }}{{ end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{/* imagePullSecrets as a JSON list: {{- with include "conveyor.imagePullSecrets" . | fromJsonArray }} */}}
{{- define "conveyor.imagePullSecrets" -}}
{{- concat (.Values.global.imagePullSecrets | default list) (.Values.imagePullSecrets | default list) | toJson -}}
{{- end -}}

{{/* ---- names ---------------------------------------------------------------------------------------- */}}

{{- define "conveyor.api.serviceAccountName" -}}
{{- if .Values.api.serviceAccount.create -}}
{{- .Values.api.serviceAccount.name | default (include "conveyor.fullname" .) -}}
{{- else -}}
{{- .Values.api.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "conveyor.controller.fullname" -}}
{{- include "conveyor.componentName" (dict "ctx" . "suffix" "controller") -}}
{{- end -}}

{{- define "conveyor.controller.serviceAccountName" -}}
{{- if .Values.controller.serviceAccount.create -}}
{{- .Values.controller.serviceAccount.name | default (include "conveyor.controller.fullname" .) -}}
{{- else -}}
{{- .Values.controller.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* Which Conveyor this release's controller is: it reconciles only resources labelled conveyor.dev/instance=<this>. */}}
{{- define "conveyor.controller.instance" -}}
{{- .Values.controller.instance | default .Release.Name -}}
{{- end -}}

{{/* controller.lease_name as configured; the controller leads with <this>-<instance> (conveyor.controller.leaseObjectName). */}}
{{- define "conveyor.controller.leaseName" -}}
{{- .Values.controller.leaseName | default "conveyor-controller" -}}
{{- end -}}

{{- define "conveyor.controller.leaseObjectName" -}}
{{- printf "%s-%s" (include "conveyor.controller.leaseName" .) (include "conveyor.controller.instance" .) -}}
{{- end -}}

{{/* controller.topic_ownership from controller.topicOwnership: team-a=orders,orders.*;team-b=payments.* ("" = no rule). */}}
{{- define "conveyor.controller.topicOwnership" -}}
{{- $entries := list -}}
{{- range $namespace, $patterns := .Values.controller.topicOwnership -}}
{{- $entries = append $entries (printf "%s=%s" $namespace (join "," $patterns)) -}}
{{- end -}}
{{- join ";" $entries -}}
{{- end -}}

{{/*
Name of a reaper CronJob, at most 52 characters: {{ include "conveyor.reaper.name" (dict "ctx" $ "kind" "delete") }}.
Everything naming the delete CronJob (the CronJob, controller.delete_reaper_cronjob, the controller's RBAC) uses this.
*/}}
{{- define "conveyor.reaper.name" -}}
{{- include "conveyor.boundedName" (dict "prefix" (include "conveyor.fullname" .ctx) "suffix" (printf "reap-%s" .kind) "max" 52) -}}
{{- end -}}

{{/* Name of the embedded database's StatefulSet (and so of its pod <name>-0 and claim data-<name>-0), at most 52 characters. */}}
{{- define "conveyor.api.statefulSetName" -}}
{{- include "conveyor.boundedName" (dict "prefix" (include "conveyor.fullname" .) "max" 52) -}}
{{- end -}}

{{/* Key of the label that marks client pods for the API NetworkPolicy (a label key's name is at most 63 characters). */}}
{{- define "conveyor.clientLabel" -}}
{{- include "conveyor.boundedName" (dict "prefix" (include "conveyor.fullname" .) "suffix" "client" "max" 63) -}}
{{- end -}}

{{- define "conveyor.configMapName" -}}
{{- include "conveyor.componentName" (dict "ctx" . "suffix" "config") -}}
{{- end -}}

{{/* ---- modes ---------------------------------------------------------------------------------------- */}}

{{/* "true" when reapers run as CronJobs: external database and reapers.external. */}}
{{- define "conveyor.reapers.cronJobs" -}}
{{- if and (not .Values.database.embedded) .Values.reapers.external }}true{{ end -}}
{{- end -}}

{{/* "true" when the delete reaper runs as a CronJob. */}}
{{- define "conveyor.reapers.deleteCronJob" -}}
{{- if and (include "conveyor.reapers.cronJobs" .) .Values.reapers.delete.enabled }}true{{ end -}}
{{- end -}}

{{/*
"true" when the controller creates and owns that CronJob (from the template in the ConfigMap) instead of the
chart rendering it: it keeps the CronJob on the stored schedule, and a rendered object it patched would be drift.
*/}}
{{- define "conveyor.reapers.deleteCronJobByController" -}}
{{- if and (include "conveyor.reapers.deleteCronJob" .) .Values.controller.enabled }}true{{ end -}}
{{- end -}}

{{/* Where the controller reads the delete CronJob it creates (a key of the ConfigMap mounted at /etc/conveyor). */}}
{{- define "conveyor.reapers.deleteCronJobTemplatePath" -}}/etc/conveyor/delete-reaper-cronjob.yaml{{- end -}}

{{/* ---- secrets -------------------------------------------------------------------------------------- */}}

{{- define "conveyor.database.secretName" -}}
{{- .Values.database.existingSecret | default (include "conveyor.componentName" (dict "ctx" . "suffix" "database")) -}}
{{- end -}}

{{- define "conveyor.database.secretKey" -}}
{{- if .Values.database.existingSecret }}{{ .Values.database.existingSecretKey }}{{ else }}url{{ end -}}
{{- end -}}

{{/* The Secret the migration hook reads: the existing one, or a hook Secret created just before the Job. */}}
{{- define "conveyor.database.hookSecretName" -}}
{{- .Values.database.existingSecret | default (include "conveyor.componentName" (dict "ctx" . "suffix" "migrate")) -}}
{{- end -}}

{{- define "conveyor.auth.secretName" -}}
{{- .Values.auth.existingSecret | default (include "conveyor.componentName" (dict "ctx" . "suffix" "auth")) -}}
{{- end -}}

{{- define "conveyor.auth.jwtSecretKey" -}}
{{- if .Values.auth.existingSecret }}{{ .Values.auth.jwtSecretKey }}{{ else }}jwt-secret{{ end -}}
{{- end -}}

{{/* "true" when the API container mounts a token of its own to read the service-account issuer's keys (values.yaml, auth.kubernetes). */}}
{{- define "conveyor.api.issuerToken" -}}
{{- if and .Values.auth.enabled .Values.auth.kubernetes.enabled (not (and .Values.database.embedded .Values.controller.enabled)) }}true{{ end -}}
{{- end -}}

{{- define "conveyor.auth.adminPasswordKey" -}}
{{- if .Values.auth.existingSecret }}{{ .Values.auth.adminPasswordKey }}{{ else }}admin-password{{ end -}}
{{- end -}}

{{/* The Secret holding tls.crt, tls.key (and ca.crt): the existing one, or the one cert-manager writes. */}}
{{- define "conveyor.tls.secretName" -}}
{{- .Values.tls.existingSecret | default (include "conveyor.componentName" (dict "ctx" . "suffix" "tls")) -}}
{{- end -}}

{{/* Where the API container (and the helm test pod) mount it; beside /etc/conveyor, not inside that ConfigMap volume. */}}
{{- define "conveyor.tls.mountPath" -}}/etc/conveyor-tls{{- end -}}

{{/*
How the kubelet probes the API: plaintext HTTP on the API port without TLS; HTTPS on it with TLS (the kubelet
does not verify the certificate); with mutual TLS the kubelet has no client certificate to present, so the
plaintext metrics port, which answers /healthz and /readyz too. As a dict: {"port": ..., "scheme": ...}.
*/}}
{{- define "conveyor.api.probeTarget" -}}
{{- if not .Values.tls.enabled -}}
{{- dict "port" "http" | toJson -}}
{{- else if .Values.tls.clientCA -}}
{{- dict "port" "metrics" | toJson -}}
{{- else -}}
{{- dict "port" "http" "scheme" "HTTPS" | toJson -}}
{{- end -}}
{{- end -}}

{{- define "conveyor.redis.enabled" -}}
{{- if or .Values.redis.url .Values.redis.existingSecret }}true{{ end -}}
{{- end -}}

{{- define "conveyor.redis.secretName" -}}
{{- .Values.redis.existingSecret | default (include "conveyor.componentName" (dict "ctx" . "suffix" "redis")) -}}
{{- end -}}

{{- define "conveyor.redis.secretKey" -}}
{{- if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretKey }}{{ else }}url{{ end -}}
{{- end -}}

{{/*
The data of a live Secret as JSON ({} when it does not exist, and always under `helm template`, `helm lint` and
--dry-run=client, where lookup answers nothing). Isolated in one define so test/chart.test.ts can replace the
lookup with a fixed Secret and check that generated values are reused.
*/}}
{{- define "conveyor.liveSecretData" -}}
{{- $secret := lookup "v1" "Secret" .namespace .name -}}
{{- dig "data" (dict) ($secret | default dict) | toJson -}}
{{- end -}}

{{/*
Which API workload this release runs now: "StatefulSet" (embedded database), "Deployment" (external) or ""
(a first install, or no cluster to ask). Isolated like the lookups above for test/chart.test.ts.
*/}}
{{- define "conveyor.liveApiWorkload" -}}
{{- $statefulSet := lookup "apps/v1" "StatefulSet" .namespace .statefulSet -}}
{{- $deployment := lookup "apps/v1" "Deployment" .namespace .deployment -}}
{{- if $statefulSet }}StatefulSet{{ else if $deployment }}Deployment{{ end -}}
{{- end -}}

{{/*
"true" when lookup reaches a cluster: a list always answers there (an empty list in a namespace still to be
created), and answers nothing under `helm template`, `helm lint`, --dry-run=client and the GitOps tools that
render with them (Argo CD). Asked only when a generated value has no earlier render to be read from. Secrets,
because Helm itself lists them in the release namespace (its release records), so whoever installs may.
Isolated like the lookups above, for test/chart-gitops.test.ts.
*/}}
{{- define "conveyor.lookupAvailable" -}}
{{- if lookup "v1" "Secret" .namespace "" }}true{{ end -}}
{{- end -}}

{{/* ---- configuration ------------------------------------------------------------------------------ */}}

{{/* conveyor.yaml: config plus the keys the chart owns. Secrets never appear here; they come as env vars. */}}
{{- define "conveyor.configFile" -}}
{{- $owned := dict
  "server" (dict "http_port" (int .Values.api.containerPorts.http) "grpc_port" (int .Values.api.containerPorts.grpc))
  "reapers" (dict "mode" (ternary "external" "in-process" (eq (include "conveyor.reapers.cronJobs" .) "true")))
  "metrics" (dict "port" (int .Values.metrics.port))
  "queue" (dict "delete_reaper_schedule" .Values.reapers.delete.schedule)
  "controller" (dict
    "namespaces" (join "," .Values.controller.watchNamespaces)
    "lease_name" (include "conveyor.controller.leaseName" .)
    "instance" (include "conveyor.controller.instance" .)
    "topic_ownership" (include "conveyor.controller.topicOwnership" .)
    "adopt_existing" .Values.controller.adoptExisting
    "delete_reaper_cronjob" (ternary (include "conveyor.reaper.name" (dict "ctx" . "kind" "delete")) "" (eq (include "conveyor.reapers.deleteCronJobByController" .) "true"))
    "delete_reaper_cronjob_template" (ternary (include "conveyor.reapers.deleteCronJobTemplatePath" .) "" (eq (include "conveyor.reapers.deleteCronJobByController" .) "true"))
    "port" (int .Values.controller.containerPort))
-}}
{{- if .Values.database.embedded }}
{{- $_ := set $owned "db" (dict "url" "sqlite:/data/conveyor.db") }}
{{- end }}
{{- $config := mustMergeOverwrite (deepCopy .Values.config) $owned -}}
{{- /* Releases sharing one Redis stay apart unless told otherwise: channels ignore the database number. */ -}}
{{- $redis := default (dict) (get $config "redis") -}}
{{- if not (get $redis "key_prefix") -}}
{{- $_ := set $redis "key_prefix" (printf "conveyor:%s.%s:" .Release.Namespace .Release.Name) -}}
{{- $_ := set $config "redis" $redis -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{/*
A duration of conveyor.yaml (500ms, 30s, 5m, 1.5h, 1d, or a number of seconds; as src/config/duration.ts reads it)
in whole seconds, rounded up: {{ include "conveyor.durationSeconds" .Values.config.server.shutdown_timeout }}
*/}}
{{- define "conveyor.durationSeconds" -}}
{{- if kindIs "string" . -}}
{{- $pattern := "^\\s*(\\d+(?:\\.\\d+)?)\\s*(ms|s|m|h|d)?\\s*$" -}}
{{- if not (regexMatch $pattern .) }}{{ fail (printf "not a duration: %q (use e.g. 500ms, 30s, 5m)" .) }}{{ end -}}
{{- $unit := regexReplaceAll $pattern . "${2}" | default "s" -}}
{{- $seconds := mulf (regexReplaceAll $pattern . "${1}" | float64) (get (dict "ms" 0.001 "s" 1 "m" 60 "h" 3600 "d" 86400) $unit) -}}
{{- $seconds | ceil | int -}}
{{- else -}}
{{- . | float64 | ceil | int -}}
{{- end -}}
{{- end -}}

{{/*
terminationGracePeriodSeconds of the API pods. Kubernetes counts it from the start of the preStop sleep and kills
the container when it runs out, so it must cover the sleep plus config.server.shutdown_timeout (in-flight requests
finishing); 5 s more let the service close its database pool and exit on its own. An explicit value that does not
cover both is refused: the pods would be killed with requests still in flight.
*/}}
{{- define "conveyor.api.terminationGracePeriodSeconds" -}}
{{- $sleep := int .Values.api.preStopSleepSeconds -}}
{{- $shutdown := include "conveyor.durationSeconds" .Values.config.server.shutdown_timeout | int -}}
{{- $explicit := .Values.api.terminationGracePeriodSeconds -}}
{{- if kindIs "invalid" $explicit -}}
{{- add $sleep $shutdown 5 -}}
{{- else if le (int $explicit) (add $sleep $shutdown) -}}
{{- fail (printf "api.terminationGracePeriodSeconds (%d) must exceed api.preStopSleepSeconds (%d) + config.server.shutdown_timeout (%v = %d s); leave it null to have it computed (%d)" (int $explicit) $sleep .Values.config.server.shutdown_timeout $shutdown (add $sleep $shutdown 5)) -}}
{{- else -}}
{{- int $explicit -}}
{{- end -}}
{{- end -}}

{{/* Where every conveyor container reads conveyor.yaml. */}}
{{- define "conveyor.configPath" -}}/etc/conveyor/conveyor.yaml{{- end -}}

{{/* env of every conveyor container: the config file and the database URL (external database). */}}
{{- define "conveyor.env.common" -}}
- name: CONVEYOR_CONFIG
  value: {{ include "conveyor.configPath" . }}
{{- if not .Values.database.embedded }}
- name: CONVEYOR_DB_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "conveyor.database.secretName" . }}
      key: {{ include "conveyor.database.secretKey" . }}
{{- end }}
{{- end -}}

{{/* env of the API container: auth (secrets) and Redis. Auth settings reach only the processes serving requests. */}}
{{- define "conveyor.env.api" -}}
{{ include "conveyor.env.common" . }}
- name: CONVEYOR_AUTH_ENABLED
  value: {{ .Values.auth.enabled | toString | quote }}
{{- if .Values.auth.enabled }}
- name: CONVEYOR_AUTH_USERNAME
  value: {{ .Values.auth.adminUsername | quote }}
- name: CONVEYOR_AUTH_JWT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "conveyor.auth.secretName" . }}
      key: {{ include "conveyor.auth.jwtSecretKey" . }}
- name: CONVEYOR_AUTH_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "conveyor.auth.secretName" . }}
      key: {{ include "conveyor.auth.adminPasswordKey" . }}
{{- if .Values.auth.kubernetes.enabled }}
- name: CONVEYOR_AUTH_KUBERNETES_ENABLED
  value: "true"
- name: CONVEYOR_AUTH_KUBERNETES_ISSUER
  value: {{ .Values.auth.kubernetes.issuer | quote }}
- name: CONVEYOR_AUTH_KUBERNETES_AUDIENCE
  value: {{ .Values.auth.kubernetes.audience | quote }}
{{- with .Values.auth.kubernetes.jwksUrl }}
- name: CONVEYOR_AUTH_KUBERNETES_JWKS_URL
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- with .Values.auth.credentialsKey.existingSecret }}
- name: CONVEYOR_AUTH_CREDENTIALS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.auth.credentialsKey.key }}
{{- if $.Values.auth.credentialsKey.previousKey }}
- name: CONVEYOR_AUTH_PREVIOUS_CREDENTIALS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.auth.credentialsKey.previousKey }}
{{- end }}
{{- end }}
{{- end }}
{{- if include "conveyor.redis.enabled" . }}
- name: CONVEYOR_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "conveyor.redis.secretName" . }}
      key: {{ include "conveyor.redis.secretKey" . }}
{{- end }}
{{- with .Values.telemetry.tracesHeaders.existingSecret }}
- name: CONVEYOR_TELEMETRY_TRACES_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.telemetry.tracesHeaders.key }}
{{- end }}
{{- if .Values.tls.enabled }}
- name: CONVEYOR_SERVER_TLS_CERT_FILE
  value: {{ include "conveyor.tls.mountPath" . }}/tls.crt
- name: CONVEYOR_SERVER_TLS_KEY_FILE
  value: {{ include "conveyor.tls.mountPath" . }}/tls.key
{{- if .Values.tls.clientCA }}
- name: CONVEYOR_SERVER_TLS_CLIENT_CA_FILE
  value: {{ include "conveyor.tls.mountPath" . }}/ca.crt
{{- end }}
{{- end }}
{{- with .Values.api.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
env of the controller container: its own namespace from the downward API, and its pod (POD_NAME, POD_NAMESPACE),
through which it finds its Deployment, the owner of the delete CronJob it creates.
*/}}
{{- define "conveyor.env.controller" -}}
{{ include "conveyor.env.common" . }}
- name: CONVEYOR_CONTROLLER_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- with .Values.controller.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The config volume and its mount, and /tmp. */}}
{{- define "conveyor.volumes" -}}
- name: config
  configMap:
    name: {{ include "conveyor.configMapName" . }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end -}}

{{- define "conveyor.volumeMounts" -}}
- name: config
  mountPath: /etc/conveyor
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* An HTTP probe: {{ include "conveyor.probe" (dict "probe" .Values.api.livenessProbe "path" "/healthz" "port" "http") }} */}}
{{- define "conveyor.probe" -}}
httpGet:
  path: {{ .path }}
  port: {{ .port }}
  {{- with .scheme }}
  scheme: {{ . }}
  {{- end }}
initialDelaySeconds: {{ .probe.initialDelaySeconds }}
periodSeconds: {{ .probe.periodSeconds }}
timeoutSeconds: {{ .probe.timeoutSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
{{- end -}}

{{/* topologySpreadConstraints (JSON list) with the component's selector filled in where none is given. */}}
{{- define "conveyor.topologySpread" -}}
{{- $selector := include "conveyor.selectorLabels" (dict "ctx" .ctx "component" .component) | fromYaml -}}
{{- $out := list -}}
{{- range .constraints }}
{{- $c := deepCopy . }}
{{- if not (hasKey $c "labelSelector") }}{{ $_ := set $c "labelSelector" (dict "matchLabels" $selector) }}{{ end }}
{{- $out = append $out $c }}
{{- end }}
{{- toJson $out -}}
{{- end -}}

{{/*
Pod annotations that roll the pods when the configuration or a chart-managed secret value changes. Whoever
may read pods (often more than may read Secrets) sees the annotations: the secret values go through scrypt
(derivePassword, salted with the release's name) rather than a bare SHA-256, which would let them test
guessed passwords offline at billions a second.
*/}}
{{- define "conveyor.checksums" -}}
checksum/config: {{ include "conveyor.configFile" . | sha256sum }}
checksum/secret-values: {{ derivePassword 1 "maximum" (list .Values.database.url .Values.database.existingSecret .Values.auth.enabled .Values.auth.jwtSecret .Values.auth.adminPassword .Values.auth.existingSecret .Values.redis.url .Values.redis.existingSecret | toJson) "conveyor" .Release.Name | sha256sum }}
{{- end -}}

{{/* ---- impossible combinations ------------------------------------------------------------------------ */}}
{{- define "conveyor.validate" -}}
{{- $v := .Values -}}
{{- if not $v.database.allowSwitch -}}
{{- $live := include "conveyor.liveApiWorkload" (dict "namespace" .Release.Namespace "statefulSet" (include "conveyor.api.statefulSetName" .) "deployment" (include "conveyor.fullname" .)) -}}
{{- if and (not $v.database.embedded) (eq $live "StatefulSet") -}}
{{- fail (printf "database.embedded=false, but release %s keeps its messages, users and topic configurations in the embedded SQLite database (StatefulSet %s): this upgrade would start the API on the external database without them, and nothing copies them over. Move to the external database with a second release (docs/kubernetes-install.md, \"Changing the database\"); to switch anyway, set database.allowSwitch=true." .Release.Name (include "conveyor.api.statefulSetName" .)) -}}
{{- end -}}
{{- if and $v.database.embedded (eq $live "Deployment") -}}
{{- fail (printf "database.embedded=true, but release %s runs on an external database (Deployment %s): this upgrade would start the API on a new, empty SQLite volume. Keep database.embedded=false; to switch anyway, set database.allowSwitch=true." .Release.Name (include "conveyor.fullname" .)) -}}
{{- end -}}
{{- end -}}
{{- if $v.database.embedded -}}
{{- if gt (int $v.api.replicaCount) 1 -}}
{{- fail (printf "database.embedded=true runs ONE pod (SQLite on a ReadWriteOnce volume): api.replicaCount must be 1, not %v. Use an external MySQL/MariaDB (database.embedded=false, database.url or database.existingSecret) to scale out." $v.api.replicaCount) -}}
{{- end -}}
{{- if $v.api.autoscaling.enabled -}}
{{- fail "database.embedded=true runs ONE pod: api.autoscaling.enabled must be false. Use an external MySQL/MariaDB (database.embedded=false) to scale out." -}}
{{- end -}}
{{- if or $v.database.url $v.database.existingSecret -}}
{{- fail "database.url / database.existingSecret name an external database: set database.embedded=false to use it (database.embedded=true runs SQLite in the pod)." -}}
{{- end -}}
{{- else -}}
{{- if and $v.database.url $v.database.existingSecret -}}
{{- fail "set either database.url or database.existingSecret, not both" -}}
{{- end -}}
{{- if not (or $v.database.url $v.database.existingSecret) -}}
{{- fail "database.embedded=false needs the external database: set database.url (mysql://user:password@host:3306/db) or database.existingSecret" -}}
{{- end -}}
{{- if and $v.database.url (not (hasPrefix "mysql://" $v.database.url)) -}}
{{- fail (printf "database.url must start with mysql:// (MySQL 8 / MariaDB 10.6+), got %q" (regexReplaceAll "//[^@/]*@" $v.database.url "//***@")) -}}
{{- end -}}
{{- end -}}
{{- if and $v.auth.enabled $v.auth.jwtSecret (lt (len $v.auth.jwtSecret) 32) -}}
{{- fail "auth.jwtSecret must be at least 32 bytes (or leave it empty to have one generated)" -}}
{{- end -}}
{{- if and $v.auth.existingSecret (or $v.auth.jwtSecret $v.auth.adminPassword) -}}
{{- fail "set either auth.existingSecret or auth.jwtSecret/auth.adminPassword, not both" -}}
{{- end -}}
{{- if and $v.redis.url $v.redis.existingSecret -}}
{{- fail "set either redis.url or redis.existingSecret, not both" -}}
{{- end -}}
{{- if and $v.api.autoscaling.enabled (gt (int $v.api.autoscaling.minReplicas) (int $v.api.autoscaling.maxReplicas)) -}}
{{- fail "api.autoscaling.minReplicas must not exceed api.autoscaling.maxReplicas" -}}
{{- end -}}
{{- if and $v.api.autoscaling.enabled (not (or $v.api.autoscaling.targetCPUUtilizationPercentage $v.api.autoscaling.targetMemoryUtilizationPercentage)) -}}
{{- fail "api.autoscaling needs targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage" -}}
{{- end -}}
{{- if and $v.api.podDisruptionBudget.enabled (not (kindIs "invalid" $v.api.podDisruptionBudget.minAvailable)) (not (kindIs "invalid" $v.api.podDisruptionBudget.maxUnavailable)) -}}
{{- fail "api.podDisruptionBudget: set minAvailable or maxUnavailable, not both" -}}
{{- end -}}
{{- if and $v.metrics.serviceMonitor.enabled (eq (int $v.metrics.port) 0) -}}
{{- fail "metrics.serviceMonitor needs the metrics listener: metrics.port must be > 0" -}}
{{- end -}}
{{- if $v.tls.enabled -}}
{{- if and $v.tls.existingSecret $v.tls.certManager.issuerRef.name -}}
{{- fail "tls: set either tls.existingSecret or tls.certManager.issuerRef.name, not both" -}}
{{- end -}}
{{- if not (or $v.tls.existingSecret $v.tls.certManager.issuerRef.name) -}}
{{- fail "tls.enabled needs a certificate: tls.certManager.issuerRef.name (a cert-manager Issuer or ClusterIssuer) or tls.existingSecret (a Secret with tls.crt and tls.key)" -}}
{{- end -}}
{{- if and $v.tls.clientCA (eq (int $v.metrics.port) 0) -}}
{{- fail "tls.clientCA (mutual TLS) needs metrics.port > 0: the kubelet's probes carry no client certificate and use the plaintext metrics port" -}}
{{- end -}}
{{- else if $v.tls.clientCA -}}
{{- fail "tls.clientCA needs tls.enabled=true" -}}
{{- end -}}
{{- if and $v.ingress.enabled (not $v.ingress.hosts) -}}
{{- fail "ingress.enabled needs at least one entry in ingress.hosts" -}}
{{- end -}}
{{- $ports := list (int $v.api.containerPorts.http) (int $v.api.containerPorts.grpc) (int $v.controller.containerPort) -}}
{{- if gt (int $v.metrics.port) 0 }}{{ $ports = append $ports (int $v.metrics.port) }}{{ end -}}
{{- if ne (len $ports) (len (uniq $ports)) -}}
{{- fail (printf "api.containerPorts, metrics.port and controller.containerPort must differ (the embedded pod holds them all), got %v" $ports) -}}
{{- end -}}
{{- end -}}
