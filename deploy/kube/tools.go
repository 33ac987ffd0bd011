//go:build tools

// The cluster's own components, built from their release: kube-up.sh runs `go build` on
// the commands these packages belong to. Importing them here keeps go.mod and go.sum
// complete for those builds.
package kube

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
)
