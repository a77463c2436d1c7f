{{/* The release's full name, at most 63 characters. */}}
{{- define "stormscale.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Standard labels (app.kubernetes.io/* and helm.sh/chart). */}}
{{- define "stormscale.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "stormscale.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "stormscale.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "stormscale.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "stormscale.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
The rules of exactly the calls the operator makes (docs/operator/reference.md lists each call):
- StormTopologies: watched (list, watch), read fresh (get), Kopf's bookkeeping annotations (patch);
- their status: read and merge-patched;
- the worker Deployment: read, and replicas set by server-side apply (patch);
- its pods: listed (CPU busy time), and before a scale-down those without a worker of the topology
  annotated to be removed first (patch, controller.kubernetes.io/pod-deletion-cost);
- HorizontalPodAutoscalers: listed to refuse fighting another writer;
- Events: one per decision;
- ConfigMaps: the fleet job's published profile, read by name (get only: no list, no watch);
- Secrets: the ones a spec's metrics.auth names, read by name (get only; rbac.readSecrets).
*/}}
{{- define "stormscale.rules" -}}
- apiGroups: [stormscale.io]
  resources: [stormtopologies]
  verbs: [get, list, watch, patch]
- apiGroups: [stormscale.io]
  resources: [stormtopologies/status]
  verbs: [get, patch]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get]
- apiGroups: [apps]
  resources: [deployments/scale]
  verbs: [patch]
- apiGroups: [autoscaling]
  resources: [horizontalpodautoscalers]
  verbs: [list]
- apiGroups: [""]
  resources: [pods]
  verbs: [list, patch]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
{{- if .Values.rbac.readSecrets }}
- apiGroups: [""]
  resources: [secrets]
  verbs: [get]
{{- end }}
{{- end -}}

{{/*
The fleet job's rules (stormscale-publish, spark/src/stormscale/publish/kube.py): list StormTopologies,
server-side apply of one ConfigMap each (an apply that creates is authorised as create, one that
changes as patch). Its samples are files (a volume or a Spark URL), which need no Kubernetes rule.
With publisher.configMapNames, patch is limited to those names (resourceNames); create cannot be:
Kubernetes' RBAC does not scope create by name. Either way only in the namespaces it serves (a Role
in each, unless it serves every namespace).
*/}}
{{- define "stormscale.publisherRules" -}}
- apiGroups: [stormscale.io]
  resources: [stormtopologies]
  verbs: [list]
{{- if .Values.publisher.configMapNames }}
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [patch]
  resourceNames:
    {{- range .Values.publisher.configMapNames }}
    - {{ . | quote }}
    {{- end }}
{{- else }}
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create, patch]
{{- end }}
{{- end -}}

{{- define "stormscale.publisherName" -}}
{{- printf "%s-publisher" (include "stormscale.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
