{{- define "metrics-server.name" -}}{{ .Release.Name }}{{- end -}}

{{- define "metrics-server.labels" -}}
app.kubernetes.io/name: metrics-server
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "metrics-server.selector" -}}
app.kubernetes.io/name: metrics-server
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "metrics-server.check" -}}
{{- if not (has .Values.certificates.mode (list "self-registration" "cert-manager")) -}}
{{- fail (printf "certificates.mode %q: want self-registration or cert-manager" .Values.certificates.mode) -}}
{{- end -}}
{{- if not (has .Values.source (list "kubelet" "simulated")) -}}
{{- fail (printf "source %q: want kubelet or simulated" .Values.source) -}}
{{- end -}}
{{- if and (eq .Values.certificates.mode "self-registration") (gt (int .Values.replicas) 1) -}}
{{- fail "replicas > 1 needs certificates.mode cert-manager: with self-registration each pod generates its own CA" -}}
{{- end -}}
{{- end -}}
