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

{{/* Container security of the sluiceway image (it runs as an unprivileged user). */}}
{{- define "sluiceway.securityContext" -}}
securityContext:
  runAsNonRoot: true
  allowPrivilegeEscalation: false
  capabilities:
    drop: ["ALL"]
{{- end -}}
