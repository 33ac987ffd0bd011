//go:build tools

// The cluster's DNS server, CoreDNS, built from its release by kube-up: Services and pods
// are found by name as in any cluster. Its own module, since its dependencies need not
// agree with the cluster's release.
package dns

import (
	_ "github.com/coredns/coredns/core/plugin"
	_ "github.com/coredns/coredns/coremain"
)
