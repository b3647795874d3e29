// libcni-driver: cnitool's command line on Go's libcni, the library
// containerd, CRI-O and Podman run plugins through. `make bench` drives both
// plugin sets with it, so the figures are what a runtime sees.
//
//	libcni-driver add|check|del <network> <netns-path>
//
// Environment as cnitool: NETCONFPATH (default /etc/cni/net.d), CNI_PATH,
// CNI_IFNAME (default eth0), CNI_ARGS, CAP_ARGS (JSON capability args), and
// the container ID cnitool derives from the netns path; CNI_CACHE_DIR. With
// CNI_BENCH_TIMING=1 it prints `elapsed_ns=<n>` on stderr: the time spent in
// the libcni call alone, without this process's own start.
package main

import (
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
)

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "libcni-driver: "+format+"\n", a...)
	os.Exit(1)
}

func parseArgs(s string) [][2]string {
	var out [][2]string
	for _, pair := range strings.Split(s, ";") {
		if pair == "" {
			continue
		}
		kv := strings.SplitN(pair, "=", 2)
		if len(kv) != 2 {
			fail("invalid CNI_ARGS pair %q", pair)
		}
		out = append(out, [2]string{kv[0], kv[1]})
	}
	return out
}

func main() {
	if len(os.Args) != 4 {
		fail("usage: libcni-driver add|check|del <network> <netns-path>")
	}
	verb, name, netns := os.Args[1], os.Args[2], os.Args[3]
	confDir := os.Getenv("NETCONFPATH")
	if confDir == "" {
		confDir = "/etc/cni/net.d"
	}
	list, err := libcni.LoadConfList(confDir, name)
	if err != nil {
		fail("%v", err)
	}
	caps := map[string]interface{}{}
	if s := os.Getenv("CAP_ARGS"); s != "" {
		if err := json.Unmarshal([]byte(s), &caps); err != nil {
			fail("CAP_ARGS: %v", err)
		}
	}
	ifname := os.Getenv("CNI_IFNAME")
	if ifname == "" {
		ifname = "eth0"
	}
	netns, err = filepath.Abs(netns)
	if err != nil {
		fail("%v", err)
	}
	// cnitool's container ID: a digest of the netns path.
	id := fmt.Sprintf("cnitool-%x", sha512.Sum512([]byte(netns)))[:len("cnitool-")+20]
	rt := &libcni.RuntimeConf{
		ContainerID:    id,
		NetNS:          netns,
		IfName:         ifname,
		Args:           parseArgs(os.Getenv("CNI_ARGS")),
		CapabilityArgs: caps,
	}
	// CNI_CACHE_DIR: where libcni keeps its result cache (its default is
	// /var/lib/cni), so a benchmark keeps it in its own private directory.
	cni := libcni.NewCNIConfigWithCacheDir(filepath.SplitList(os.Getenv("CNI_PATH")), os.Getenv("CNI_CACHE_DIR"), nil)
	ctx := context.Background()
	start := time.Now()
	switch verb {
	case "add":
		var res interface{ Print() error }
		res, err = cni.AddNetworkList(ctx, list, rt)
		elapsed := time.Since(start)
		if err == nil {
			err = res.Print()
		}
		report(elapsed)
	case "check":
		err = cni.CheckNetworkList(ctx, list, rt)
		report(time.Since(start))
	case "del":
		err = cni.DelNetworkList(ctx, list, rt)
		report(time.Since(start))
	default:
		fail("unknown command %q", verb)
	}
	if err != nil {
		fail("%v", err)
	}
}

func report(d time.Duration) {
	if os.Getenv("CNI_BENCH_TIMING") == "1" {
		fmt.Fprintf(os.Stderr, "elapsed_ns=%d\n", d.Nanoseconds())
	}
}
