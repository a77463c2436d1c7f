// Command etcd is the etcd server at the version Kubernetes v1.32 pins (go.etcd.io/etcd 3.5.x).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
