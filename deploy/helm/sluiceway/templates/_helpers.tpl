{{/* Labels every object carries; "component" names the part of sluiceway. */}}
{{- define "sluiceway.labels" -}}
app.kubernetes.io/name: sluiceway
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/component: {{ .component }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector labels of one component. */}}
{{- define "sluiceway.selector" -}}
app.kubernetes.io/name: sluiceway
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "sluiceway.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Prometheus scrape annotations for a pod serving /metrics on "port". */}}
{{- define "sluiceway.scrape" -}}
{{- if .root.Values.scrapeAnnotations }}
annotations:
  prometheus.io/scrape: "true"
  prometheus.io/port: {{ .port | quote }}
  prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/* Model server URLs the router sends to: the given list, or every simulator replica. */}}
{{- define "sluiceway.endpoints" -}}
{{- if .Values.sluicewayRouter.endpoints -}}
{{ join "," .Values.sluicewayRouter.endpoints }}
{{- else -}}
{{- $sim := .Values.simulator -}}
{{- $urls := list -}}
{{- range $i := until (int $sim.replicas) -}}
{{- $urls = append $urls (printf "http://%s-%d.%s:%d" $sim.name $i $sim.name (int $sim.port)) -}}
{{- end -}}
{{ join "," $urls }}
{{- end -}}
{{- end -}}

{{/* The router chart's model server labels (router.modelServers.matchLabels), or none. */}}
{{- define "sluiceway.modelServerLabels" -}}
{{- $servers := (.Values.router | default dict).modelServers | default dict -}}
{{- toYaml ($servers.matchLabels | default dict) -}}
{{- end -}}

{{/* Where the router's model servers come from: endpoints, inference-pool, pod-selector or
     simulator (see values.yaml, sluicewayRouter). */}}
{{- define "sluiceway.membership" -}}
{{- $r := .Values.sluicewayRouter -}}
{{- $labels := include "sluiceway.modelServerLabels" . | fromYaml -}}
{{- if $r.endpoints -}}endpoints
{{- else if $r.inferencePool -}}inference-pool
{{- else if $labels -}}pod-selector
{{- else if .Values.simulator.enabled -}}simulator
{{- else -}}
{{- fail "sluicewayRouter: no model servers: give sluicewayRouter.endpoints, sluicewayRouter.inferencePool or router.modelServers.matchLabels, or enable the simulator" -}}
{{- end -}}
{{- end -}}

{{/* The router's ServiceAccount (used when it watches Pods or an InferencePool). */}}
{{- define "sluiceway.routerServiceAccount" -}}
{{ .Values.sluicewayRouter.serviceAccount.name | default .Values.sluicewayRouter.name }}
{{- end -}}

{{/* The router's flags that name its model servers. */}}
{{- define "sluiceway.membershipArgs" -}}
{{- $r := .Values.sluicewayRouter -}}
{{- $mode := include "sluiceway.membership" . -}}
{{- if eq $mode "inference-pool" }}
- --inference-pool={{ $r.inferencePool }}
{{- else if eq $mode "pod-selector" }}
{{- $labels := include "sluiceway.modelServerLabels" . | fromYaml }}
{{- $pairs := list }}
{{- range $key := keys $labels | sortAlpha }}
{{- $pairs = append $pairs (printf "%s=%s" $key (get $labels $key)) }}
{{- end }}
{{- $default := ternary .Values.simulator.port 8000 (.Values.simulator.enabled | default false) }}
- --pod-selector={{ join "," $pairs }}
- --target-port={{ $r.targetPort | default $default }}
{{- else }}
- --endpoints={{ include "sluiceway.endpoints" . }}
{{- end }}
{{- end -}}

{{/* The capacity ledger the router replicas share: sluicewayRouter.ledger, or with several
replicas and ledger "" the chart's Redis; nothing for one replica or "off". */}}
{{- define "sluiceway.ledgerArgs" -}}
{{- $r := .Values.sluicewayRouter -}}
{{- $url := "" -}}
{{- if eq $r.ledger "off" -}}
{{- else if $r.ledger -}}
{{- $url = $r.ledger -}}
{{- else if gt (int $r.replicas) 1 -}}
{{- if not .Values.redis.enabled -}}
{{- fail "sluicewayRouter.ledger: several router replicas share the pool through Redis: give a redis:// URL (or \"off\")" -}}
{{- end -}}
{{- $url = printf "redis://%s:%v" .Values.redis.name .Values.redis.port -}}
{{- end -}}
{{- if $url }}
- --ledger={{ $url }}
- --ledger-lease={{ $r.ledgerLease | default "3s" }}
{{- end -}}
{{- end -}}

{{/* The pod securityContext of the sluiceway workloads. */}}
{{- define "sluiceway.podSecurityContext" -}}
{{- with .Values.podSecurityContext -}}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Container security of the sluiceway image (it runs as an unprivileged user and writes
     nothing but /tmp, an emptyDir: see sluiceway.tmpVolume). */}}
{{- define "sluiceway.securityContext" -}}
securityContext:
  runAsNonRoot: true
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: ["ALL"]
{{- end -}}

{{/* /tmp for the read-only sluiceway containers: the mount, then the volume. */}}
{{- define "sluiceway.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}
{{- define "sluiceway.tmpVolume" -}}
- name: tmp
  emptyDir: {}
{{- end -}}
