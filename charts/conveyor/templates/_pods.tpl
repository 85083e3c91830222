{{/* The API container (`conveyor serve`). */}}
{{- define "conveyor.api.container" -}}
- name: conveyor
  image: {{ include "conveyor.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args: ["serve"]
  env:
    {{- include "conveyor.env.api" . | nindent 4 }}
  ports:
    - name: http
      containerPort: {{ .Values.api.containerPorts.http }}
      protocol: TCP
    - name: grpc
      containerPort: {{ .Values.api.containerPorts.grpc }}
      protocol: TCP
    {{- if gt (int .Values.metrics.port) 0 }}
    - name: metrics
      containerPort: {{ .Values.metrics.port }}
      protocol: TCP
    {{- end }}
  {{- $probe := include "conveyor.api.probeTarget" . | fromJson }}
  {{- if .Values.api.startupProbe.enabled }}
  startupProbe:
    {{- include "conveyor.probe" (merge (dict "probe" .Values.api.startupProbe "path" "/healthz") $probe) | nindent 4 }}
  {{- end }}
  {{- if .Values.api.livenessProbe.enabled }}
  livenessProbe:
    {{- include "conveyor.probe" (merge (dict "probe" .Values.api.livenessProbe "path" "/healthz") $probe) | nindent 4 }}
  {{- end }}
  {{- if .Values.api.readinessProbe.enabled }}
  readinessProbe:
    {{- include "conveyor.probe" (merge (dict "probe" .Values.api.readinessProbe "path" "/readyz") $probe) | nindent 4 }}
  {{- end }}
  {{- if gt (int .Values.api.preStopSleepSeconds) 0 }}
  # On SIGTERM the service closes its listeners at once, but kube-proxy and ingress controllers learn of the pod's
  # removal from the endpoints a moment later and would still send it new connections: keep serving meanwhile.
  # An exec of the image's sleep (coreutils of the Debian-based node image), not the native sleep action, which
  # needs a newer Kubernetes than the chart's kubeVersion.
  lifecycle:
    preStop:
      exec:
        command: ["sleep", {{ .Values.api.preStopSleepSeconds | int | toString | quote }}]
  {{- end }}
  resources:
    {{- toYaml .Values.api.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.containerSecurityContext | nindent 4 }}
  volumeMounts:
    {{- include "conveyor.volumeMounts" . | nindent 4 }}
    {{- if .Values.database.embedded }}
    - name: data
      mountPath: /data
    {{- end }}
    {{- if .Values.tls.enabled }}
    - name: tls
      mountPath: {{ include "conveyor.tls.mountPath" . }}
      readOnly: true
    {{- end }}
    {{- if include "conveyor.api.issuerToken" . }}
    - name: issuer-access
      mountPath: /var/run/secrets/kubernetes.io/serviceaccount
      readOnly: true
    {{- end }}
    {{- with .Values.api.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* The controller container (`conveyor controller`); `sidecar` leaves out the readiness probe. */}}
{{- define "conveyor.controller.container" -}}
{{- $ := .ctx -}}
- name: controller
  image: {{ include "conveyor.image" $ }}
  imagePullPolicy: {{ $.Values.image.pullPolicy }}
  args: ["controller"]
  env:
    {{- include "conveyor.env.controller" $ | nindent 4 }}
  ports:
    - name: controller
      containerPort: {{ $.Values.controller.containerPort }}
      protocol: TCP
  {{- if $.Values.controller.livenessProbe.enabled }}
  livenessProbe:
    {{- include "conveyor.probe" (dict "probe" $.Values.controller.livenessProbe "path" "/healthz" "port" "controller") | nindent 4 }}
  {{- end }}
  {{- if and $.Values.controller.readinessProbe.enabled (not .sidecar) }}
  readinessProbe:
    {{- include "conveyor.probe" (dict "probe" $.Values.controller.readinessProbe "path" "/readyz" "port" "controller") | nindent 4 }}
  {{- end }}
  resources:
    {{- toYaml $.Values.controller.resources | nindent 4 }}
  securityContext:
    {{- toYaml $.Values.containerSecurityContext | nindent 4 }}
  volumeMounts:
    {{- include "conveyor.volumeMounts" $ | nindent 4 }}
    {{- if .sidecar }}
    - name: data
      mountPath: /data
    - name: kube-api-access
      mountPath: /var/run/secrets/kubernetes.io/serviceaccount
      readOnly: true
    {{- end }}
{{- end -}}

{{/* The API pod template, for the Deployment (external database) and the StatefulSet (embedded). */}}
{{- define "conveyor.api.podTemplate" -}}
{{- $component := include "conveyor.api.component" . -}}
{{- $sidecar := and .Values.database.embedded .Values.controller.enabled -}}
metadata:
  labels:
    {{- include "conveyor.labels" (dict "ctx" . "component" $component) | nindent 4 }}
    {{- with .Values.api.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    {{- include "conveyor.checksums" . | nindent 4 }}
    {{- with .Values.api.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  {{- if $sidecar }}
  # The controller runs as a sidecar sharing the SQLite volume, so the pod runs as the controller's account;
  # its token is mounted into the controller container only (volume kube-api-access), never into the API's,
  # which faces the network and never calls the Kubernetes API.
  serviceAccountName: {{ include "conveyor.controller.serviceAccountName" . }}
  {{- else }}
  serviceAccountName: {{ include "conveyor.api.serviceAccountName" . }}
  {{- end }}
  automountServiceAccountToken: false
  {{- with include "conveyor.imagePullSecrets" . | fromJsonArray }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ include "conveyor.api.terminationGracePeriodSeconds" . }}
  {{- with .Values.api.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .Values.api.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.api.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.api.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if not .Values.database.embedded }}
  {{- with include "conveyor.topologySpread" (dict "ctx" . "component" $component "constraints" .Values.api.topologySpreadConstraints) | fromJsonArray }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- end }}
  {{- if and .Values.database.embedded .Values.migrations.enabled }}
  # Embedded database: migrate the SQLite file once, before the API and the controller both open it.
  initContainers:
    - name: migrate
      image: {{ include "conveyor.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args: ["migrate"]
      env:
        {{- include "conveyor.env.common" . | nindent 8 }}
      resources:
        {{- toYaml .Values.migrations.resources | nindent 8 }}
      securityContext:
        {{- toYaml .Values.containerSecurityContext | nindent 8 }}
      volumeMounts:
        {{- include "conveyor.volumeMounts" . | nindent 8 }}
        - name: data
          mountPath: /data
  {{- end }}
  containers:
    {{- include "conveyor.api.container" . | nindent 4 }}
    {{- if $sidecar }}
    {{- include "conveyor.controller.container" (dict "ctx" . "sidecar" true) | nindent 4 }}
    {{- end }}
  volumes:
    {{- include "conveyor.volumes" . | nindent 4 }}
    {{- if $sidecar }}
    # What the kubelet mounts for automountServiceAccountToken (a short-lived, rotated token, the cluster's CA,
    # the namespace), as a volume of its own so that only the controller container mounts it.
    - name: kube-api-access
      projected:
        defaultMode: 292 # 0444
        sources:
          - serviceAccountToken:
              path: token
              expirationSeconds: 3607
          - configMap:
              name: kube-root-ca.crt
              items:
                - key: ca.crt
                  path: ca.crt
          - downwardAPI:
              items:
                - path: namespace
                  fieldRef:
                    apiVersion: v1
                    fieldPath: metadata.namespace
    {{- end }}
    {{- if .Values.tls.enabled }}
    # Mounted as a directory (no subPath), so the kubelet's updates of the Secret reach the running pod; the
    # service re-reads the files (config.server.tls_reload_interval).
    - name: tls
      secret:
        secretName: {{ include "conveyor.tls.secretName" . }}
        defaultMode: 288 # 0440: read by the pod's group (fsGroup) only
    {{- end }}
    {{- if include "conveyor.api.issuerToken" . }}
    # auth.kubernetes.enabled: a token of the API pods' own account (which holds no RBAC of its own) and the
    # cluster's CA, used only to read the service-account issuer's public keys from the API server.
    - name: issuer-access
      projected:
        defaultMode: 292 # 0444
        sources:
          - serviceAccountToken:
              path: token
              expirationSeconds: 3607
          - configMap:
              name: kube-root-ca.crt
              items:
                - key: ca.crt
                  path: ca.crt
    {{- end }}
    {{- with .Values.api.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/*
A reaper CronJob: {{ include "conveyor.reaper.cronJob" (dict "ctx" $ "kind" "expiry") }}. `managedBy` replaces the
managed-by label (the controller's delete CronJob: "conveyor-controller").
*/}}
{{- define "conveyor.reaper.cronJob" -}}
{{- $ := .ctx -}}
{{- $kind := .kind -}}
{{- $reaper := index $.Values.reapers $kind -}}
{{- $labels := include "conveyor.labels" (dict "ctx" $ "component" (printf "reap-%s" $kind)) | fromYaml -}}
{{- with .managedBy }}{{ $_ := set $labels "app.kubernetes.io/managed-by" . }}{{ end -}}
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ include "conveyor.reaper.name" (dict "ctx" $ "kind" $kind) }}
  namespace: {{ $.Release.Namespace }}
  labels:
    {{- toYaml $labels | nindent 4 }}
  {{- include "conveyor.annotations" (dict "ctx" $) }}
spec:
  schedule: {{ $reaper.schedule | quote }}
  suspend: false
  {{- with $.Values.reapers.timeZone }}
  timeZone: {{ . | quote }}
  {{- end }}
  concurrencyPolicy: Forbid
  startingDeadlineSeconds: {{ $.Values.reapers.startingDeadlineSeconds }}
  successfulJobsHistoryLimit: {{ $.Values.reapers.successfulJobsHistoryLimit }}
  failedJobsHistoryLimit: {{ $.Values.reapers.failedJobsHistoryLimit }}
  jobTemplate:
    metadata:
      labels:
        {{- toYaml $labels | nindent 8 }}
    spec:
      backoffLimit: {{ $.Values.reapers.backoffLimit }}
      activeDeadlineSeconds: {{ $.Values.reapers.activeDeadlineSeconds }}
      template:
        metadata:
          labels:
            {{- toYaml $labels | nindent 12 }}
        # No checksum annotations: every run is a new pod, which reads the current ConfigMap and Secrets anyway.
        spec:
          restartPolicy: Never
          serviceAccountName: {{ include "conveyor.api.serviceAccountName" $ }}
          automountServiceAccountToken: false
          {{- with include "conveyor.imagePullSecrets" $ | fromJsonArray }}
          imagePullSecrets:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            {{- toYaml $.Values.podSecurityContext | nindent 12 }}
          {{- with $.Values.reapers.nodeSelector }}
          nodeSelector:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with $.Values.reapers.tolerations }}
          tolerations:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          containers:
            - name: reap
              image: {{ include "conveyor.image" $ }}
              imagePullPolicy: {{ $.Values.image.pullPolicy }}
              args: ["reap", {{ $kind | quote }}]
              env:
                {{- include "conveyor.env.common" $ | nindent 16 }}
              resources:
                {{- toYaml $.Values.reapers.resources | nindent 16 }}
              securityContext:
                {{- toYaml $.Values.containerSecurityContext | nindent 16 }}
              volumeMounts:
                {{- include "conveyor.volumeMounts" $ | nindent 16 }}
          volumes:
            {{- include "conveyor.volumes" $ | nindent 12 }}
{{- end -}}
