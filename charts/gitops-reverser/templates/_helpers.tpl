{{/* Name of the chart, overridable. */}}
{{- define "gitops-reverser.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fully qualified name: release-name prefixed unless it already holds the chart name. */}}
{{- define "gitops-reverser.fullname" -}}
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

{{- define "gitops-reverser.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gitops-reverser.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gitops-reverser.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gitops-reverser.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "gitops-reverser.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gitops-reverser.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Namespace of the chart-created credentials Secret. */}}
{{- define "gitops-reverser.credentialsNamespace" -}}
{{- default .Release.Namespace .Values.credentials.namespace -}}
{{- end -}}

{{/* Name of the audit ingress's Service; the serving certificate names it. */}}
{{- define "gitops-reverser.admissionService" -}}
{{- printf "%s-admission" (include "gitops-reverser.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gitops-reverser.auditService" -}}
{{- printf "%s-audit" (include "gitops-reverser.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The host of attribution.webhookURL, without port or brackets; "" when unset. */}}
{{- define "gitops-reverser.auditWebhookHost" -}}
{{- with .Values.attribution.webhookURL -}}
{{- (urlParse .).hostname -}}
{{- end -}}
{{- end -}}

{{/* An IP address (v4 or v6), as opposed to a DNS name. */}}
{{- define "gitops-reverser.isIP" -}}
{{- if or (regexMatch "^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+$" .) (contains ":" .) -}}true{{- end -}}
{{- end -}}

{{/*
The DNS names the audit ingress's serving certificate holds: the Service's
names, extraDNSNames, and the host of webhookURL when it is a name.
*/}}
{{- define "gitops-reverser.auditDNSNames" -}}
{{- $svc := include "gitops-reverser.auditService" . -}}
{{- $ns := .Release.Namespace -}}
{{- $names := concat (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns)) .Values.attribution.extraDNSNames -}}
{{- $host := include "gitops-reverser.auditWebhookHost" . -}}
{{- if and $host (not (include "gitops-reverser.isIP" $host)) -}}
{{- $names = append $names $host -}}
{{- end -}}
{{- toJson ($names | uniq) -}}
{{- end -}}

{{/*
The IP addresses the audit ingress's serving certificate holds:
extraIPAddresses, and the host of webhookURL when it is an address (a
static-pod kube-apiserver cannot resolve a .svc name).
*/}}
{{- define "gitops-reverser.auditIPAddresses" -}}
{{- $ips := .Values.attribution.extraIPAddresses -}}
{{- $host := include "gitops-reverser.auditWebhookHost" . -}}
{{- if and $host (include "gitops-reverser.isIP" $host) -}}
{{- $ips = append $ips $host -}}
{{- end -}}
{{- toJson ($ips | uniq) -}}
{{- end -}}

{{/* The Secret mounted into the operator's Pod for the audit ingress. */}}
{{- define "gitops-reverser.auditServingSecret" -}}
{{- .Values.attribution.existingSecret | default (printf "%s-audit-serving" (include "gitops-reverser.fullname" .)) -}}
{{- end -}}

{{/* Where the audit ingress's certificate is mounted in the operator's Pod. */}}
{{- define "gitops-reverser.auditCertDir" -}}/etc/gitops-reverser/audit{{- end -}}

{{/* The URL kube-apiserver posts its audit batches to. */}}
{{- define "gitops-reverser.auditWebhookURL" -}}
{{- if .Values.attribution.webhookURL -}}
{{- .Values.attribution.webhookURL -}}
{{- else -}}
{{- printf "https://%s.%s.svc:%v/audit-webhook/%s" (include "gitops-reverser.auditService" .) .Release.Namespace .Values.attribution.service.port .Values.attribution.auditRoute -}}
{{- end -}}
{{- end -}}

{{/*
"true" when attribution takes facts from the API server's audit webhook
(attribution.source audit or both), else "".
*/}}
{{- define "gitops-reverser.auditOn" -}}
{{- if and .Values.attribution.enabled (has .Values.attribution.source (list "audit" "both")) -}}true{{- end -}}
{{- end -}}

{{/*
"true" when attribution takes facts from the admission observer
(attribution.source admission or both), else "".
*/}}
{{- define "gitops-reverser.observerOn" -}}
{{- if and .Values.attribution.enabled (has .Values.attribution.source (list "admission" "both")) -}}true{{- end -}}
{{- end -}}

{{/* The admission observer's ValidatingWebhookConfiguration. */}}
{{- define "gitops-reverser.observerConfiguration" -}}
{{- printf "%s-observer" (include "gitops-reverser.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Attribution's preconditions, checked where the Deployment renders. The
memory transport keeps facts in one process: a second replica would miss
the facts the first received.
*/}}
{{- define "gitops-reverser.attributionChecks" -}}
{{- if .Values.attribution.enabled -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.redis.addr) -}}
{{- fail (printf "attribution.enabled=true keeps audit facts in memory in one process (--author-attribution-transport=memory) and needs replicaCount: 1, not %v (or redis.addr, for the Redis transport)" .Values.replicaCount) -}}
{{- end -}}
{{- if and .Values.attribution.existingSecret .Values.attribution.certManager.enabled -}}
{{- fail "attribution.existingSecret names a Secret you manage, attribution.certManager.enabled has cert-manager issue one: set only one of them" -}}
{{- end -}}
{{- if and (include "gitops-reverser.observerOn" .) (not .Values.admission.enabled) -}}
{{- fail (printf "attribution.source=%s serves the admission observer on the operator's webhook server: it needs admission.enabled=true" .Values.attribution.source) -}}
{{- end -}}
{{- if and .Values.attribution.certManager.enabled (include "gitops-reverser.auditOn" .) (not (.Capabilities.APIVersions.Has "cert-manager.io/v1")) -}}
{{- fail "attribution.certManager.enabled=true needs cert-manager (the cert-manager.io/v1 API) in the cluster; install it, or set it false and the chart generates the certificates" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The namespaces whose Secrets the operator reads, as a JSON list: the release
namespace (remote kubeconfigs), credentials.namespace and
rbac.credentialNamespaces, without duplicates, sorted.
*/}}
{{- define "gitops-reverser.credentialNamespaces" -}}
{{- $all := concat (list .Release.Namespace (include "gitops-reverser.credentialsNamespace" .)) .Values.rbac.credentialNamespaces -}}
{{- toJson ($all | uniq | sortAlpha) -}}
{{- end -}}
