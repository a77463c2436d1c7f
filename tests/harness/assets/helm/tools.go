//go:build tools

// Package tools keeps helm.sh/helm/v3 in go.mod (cmd/helm is a main package and cannot be imported).
package tools

import _ "helm.sh/helm/v3/pkg/action"
