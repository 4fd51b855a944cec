{{/* The chart's name, 63 characters at most. */}}
{{- define "delaybridge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The name of every object: the release's, with the chart's unless it already holds it. */}}
{{- define "delaybridge.fullname" -}}
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

{{- define "delaybridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "delaybridge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "delaybridge.consoleSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-console" (include "delaybridge.name" .) }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: console
{{- end -}}

{{- define "delaybridge.consoleLabels" -}}
{{ include "delaybridge.consoleSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "delaybridge.apiSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-api" (include "delaybridge.name" .) }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: api
{{- end -}}

{{- define "delaybridge.apiLabels" -}}
{{ include "delaybridge.apiSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "delaybridge.labels" -}}
{{ include "delaybridge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "delaybridge.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "delaybridge.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "delaybridge.secretName" -}}
{{- default (include "delaybridge.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{- define "delaybridge.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
The text of a value as the daemon reads it. Helm reads numbers from YAML as
float64, which would print 134217728 as 1.34217728e+08: integers are
printed as integers.
*/}}
{{- define "delaybridge.text" -}}
{{- if kindIs "float64" . -}}
{{- if eq (float64 (int64 .)) . -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* DELAYBRIDGE_<NAME>: a camelCase key of config or a topic (batchSize: BATCH_SIZE). */}}
{{- define "delaybridge.varName" -}}
{{- snakecase . | upper -}}
{{- end -}}

{{/* A topic's <NAME> in DELAYBRIDGE_TOPIC_<NAME>_*, as config.VarName makes it. */}}
{{- define "delaybridge.topicVarName" -}}
{{- regexReplaceAll "[^A-Za-z0-9]" . "_" | upper -}}
{{- end -}}

{{/* The HTTP port: the port of config.httpAddr. */}}
{{- define "delaybridge.httpPort" -}}
{{- $port := splitList ":" (toString .Values.config.httpAddr) | last -}}
{{- if not (regexMatch "^[1-9][0-9]*$" $port) -}}
{{- fail (printf "config.httpAddr %q: want host:port with a fixed port (the probes and the Service need it)" .Values.config.httpAddr) -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{/*
GOMEMLIMIT: 90% of resources.limits.memory, in bytes (rounded down). Above
it the Go runtime collects garbage harder; the rest is headroom for what it
does not count (goroutine stacks, socket buffers).
*/}}
{{- define "delaybridge.goMemLimit" -}}
{{- $q := toString .Values.resources.limits.memory -}}
{{- $num := regexFind "^[1-9][0-9]*" $q -}}
{{- $unit := trimPrefix $num $q -}}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 -}}
{{- if or (eq $num "") (not (hasKey $units $unit)) -}}
{{- fail (printf "resources.limits.memory %q: want an integer with an optional unit Ki, Mi, Gi, Ti, k, M, G or T" $q) -}}
{{- end -}}
{{- div (mul (int64 $num) (get $units $unit) 9) 10 -}}
{{- end -}}

{{/* The credentials read from the Secret: value key → variable. */}}
{{- define "delaybridge.secretVars" -}}
redisUrl: REDIS_URL
redisPassword: REDIS_PASSWORD
redisSentinelPassword: REDIS_SENTINEL_PASSWORD
amqpUrl: AMQP_URL
kafkaSaslPassword: KAFKA_SASL_PASSWORD
sinkRedisUrl: SINK_REDIS_URL
sinkRedisPassword: SINK_REDIS_PASSWORD
sinkRedisSentinelPassword: SINK_REDIS_SENTINEL_PASSWORD
consoleToken: CONSOLE_TOKEN
apiTokens: API_TOKENS
{{- end -}}
