{{- define "environments.name" -}}{{ .Release.Name }}{{- end -}}

{{- define "environments.labels" -}}
app.kubernetes.io/name: environments
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "environments.selector" -}}
app.kubernetes.io/name: environments
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "environments.versions" -}}v1beta1 v1alpha1{{- end -}}

{{- define "environments.check" -}}
{{- if not (has .Values.storage.backend (list "bbolt" "etcd")) -}}
{{- fail (printf "storage.backend %q: want bbolt or etcd" .Values.storage.backend) -}}
{{- end -}}
{{- if not (has .Values.certificates.mode (list "self-registration" "cert-manager")) -}}
{{- fail (printf "certificates.mode %q: want self-registration or cert-manager" .Values.certificates.mode) -}}
{{- end -}}
{{- if and (eq .Values.storage.backend "bbolt") (gt (int .Values.replicas) 1) -}}
{{- fail "replicas > 1 needs storage.backend etcd: one bbolt file has one writer" -}}
{{- end -}}
{{- if and (eq .Values.storage.backend "etcd") (not .Values.storage.etcd.servers) -}}
{{- fail "storage.backend etcd needs storage.etcd.servers" -}}
{{- end -}}
{{- if and (eq .Values.storage.backend "etcd") (eq .Values.certificates.mode "self-registration") -}}
{{- fail "certificates.mode self-registration keeps the serving CA in the bbolt data directory: with etcd use cert-manager, so every replica serves one certificate" -}}
{{- end -}}
{{- end -}}
