// libcni-driver: cnitool's command line on Go's libcni, the library
// containerd, CRI-O and Podman run plugins through. `make bench` drives both
// plugin sets with it, so the figures are what a runtime sees.
//
//	libcni-driver add|check|del <network> <netns-path>
//	libcni-driver status|version <network> [<netns-path>]
//	libcni-driver gc <network> [<netns-path>] [--valid CONTAINERID/IFNAME ...]
//
// version asks the network's first plugin for its VERSION (one exec: the
// floor every other call stands on). Debian's libcni (1.1.2) has no STATUS or
// GC and converts cached results up to 1.0.0 only: status and gc do what
// libcni 1.2's GetStatusNetworkList and GCNetworkList do, on 1.1.2's own
// calls, and ADD/CHECK/DEL of a 1.1.0 list (and gc's DEL of stale
// attachments) go at 1.0.0.
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
	"io/ioutil"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
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
	if len(os.Args) < 3 {
		fail("usage: libcni-driver add|check|del|status|version|gc <network> [<netns-path>] [--valid ID/IF ...]")
	}
	verb, name, netns := os.Args[1], os.Args[2], ""
	rest := os.Args[3:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "--") {
		netns, rest = rest[0], rest[1:]
	}
	if netns == "" && (verb == "add" || verb == "check" || verb == "del") {
		fail("%s needs a netns path", verb)
	}
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
	if netns != "" {
		if netns, err = filepath.Abs(netns); err != nil {
			fail("%v", err)
		}
	}
	// The list as libcni 1.1.2 can run ADD/CHECK/DEL on (see above).
	legacy := *list
	if legacy.CNIVersion == "1.1.0" {
		legacy.CNIVersion = "1.0.0"
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
	paths := filepath.SplitList(os.Getenv("CNI_PATH"))
	cni := libcni.NewCNIConfigWithCacheDir(paths, os.Getenv("CNI_CACHE_DIR"), nil)
	ctx := context.Background()
	var valid map[[2]string]bool
	if verb == "gc" {
		if valid, err = parseValid(rest); err != nil {
			fail("%v", err)
		}
	} else if len(rest) > 0 {
		fail("unexpected arguments %q", rest)
	}
	start := time.Now()
	switch verb {
	case "add":
		var res interface{ Print() error }
		res, err = cni.AddNetworkList(ctx, &legacy, rt)
		elapsed := time.Since(start)
		if err == nil {
			err = res.Print()
		}
		report(elapsed)
	case "check":
		err = cni.CheckNetworkList(ctx, &legacy, rt)
		report(time.Since(start))
	case "del":
		err = cni.DelNetworkList(ctx, &legacy, rt)
		report(time.Since(start))
	case "version":
		_, err = cni.GetVersionInfo(ctx, list.Plugins[0].Network.Type)
		report(time.Since(start))
	case "status":
		err = status(ctx, paths, list)
		report(time.Since(start))
	case "gc":
		err = gc(ctx, cni, paths, list, &legacy, valid, os.Getenv("CNI_CACHE_DIR"))
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

// parseValid reads --valid CONTAINERID/IFNAME arguments (cnitool's gc flag).
func parseValid(args []string) (map[[2]string]bool, error) {
	valid := map[[2]string]bool{}
	for i := 0; i < len(args); i++ {
		if args[i] != "--valid" || i+1 == len(args) {
			return nil, fmt.Errorf("expected --valid CONTAINERID/IFNAME, got %q", args[i])
		}
		i++
		kv := strings.SplitN(args[i], "/", 2)
		if len(kv) != 2 || kv[0] == "" || kv[1] == "" {
			return nil, fmt.Errorf("--valid %q: expected CONTAINERID/IFNAME", args[i])
		}
		valid[[2]string{kv[0], kv[1]}] = true
	}
	return valid, nil
}

// execEach runs every plugin of the list with `command` and no attachment,
// its config carrying the list's name and version plus `extra`.
func execEach(ctx context.Context, paths []string, list *libcni.NetworkConfigList, command string, extra map[string]interface{}) error {
	inject := map[string]interface{}{"name": list.Name, "cniVersion": list.CNIVersion}
	for k, v := range extra {
		inject[k] = v
	}
	for _, plugin := range list.Plugins {
		conf, err := libcni.InjectConf(plugin, inject)
		if err != nil {
			return err
		}
		path, err := invoke.FindInPath(plugin.Network.Type, paths)
		if err != nil {
			return err
		}
		args := &invoke.Args{Command: command, Path: strings.Join(paths, ":")}
		if err := invoke.ExecPluginWithoutResult(ctx, path, conf.Bytes, args, nil); err != nil {
			return fmt.Errorf("plugin %s failed (%s): %w", plugin.Network.Type, strings.ToLower(command), err)
		}
	}
	return nil
}

// status: STATUS of every plugin in order, the first error returned.
func status(ctx context.Context, paths []string, list *libcni.NetworkConfigList) error {
	if list.CNIVersion != "1.1.0" {
		return nil
	}
	return execEach(ctx, paths, list, "STATUS", nil)
}

// cachedAttachment is what libcni caches per attachment (results/NET-ID-IF).
type cachedAttachment struct {
	Kind           string                 `json:"kind"`
	ContainerID    string                 `json:"containerId"`
	IfName         string                 `json:"ifName"`
	NetworkName    string                 `json:"networkName"`
	NetNS          string                 `json:"netns"`
	CniArgs        [][2]string            `json:"cniArgs"`
	CapabilityArgs map[string]interface{} `json:"capabilityArgs"`
}

// gc: DEL of every cached attachment of the network not in `valid`, then GC
// of every plugin with the valid attachments.
func gc(ctx context.Context, cni *libcni.CNIConfig, paths []string, list, legacy *libcni.NetworkConfigList, valid map[[2]string]bool, cacheDir string) error {
	if cacheDir == "" {
		cacheDir = libcni.CacheDir
	}
	dir := filepath.Join(cacheDir, "results")
	entries, err := ioutil.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var errs []string
	for _, e := range entries {
		data, err := ioutil.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var a cachedAttachment
		if json.Unmarshal(data, &a) != nil || a.Kind != libcni.CNICacheV1 || a.NetworkName != list.Name {
			continue
		}
		if valid[[2]string{a.ContainerID, a.IfName}] {
			continue
		}
		rt := &libcni.RuntimeConf{ContainerID: a.ContainerID, NetNS: a.NetNS, IfName: a.IfName,
			Args: a.CniArgs, CapabilityArgs: a.CapabilityArgs}
		if err := cni.DelNetworkList(ctx, legacy, rt); err != nil {
			errs = append(errs, fmt.Sprintf("stale attachment %s/%s: %v", a.ContainerID, a.IfName, err))
		}
	}
	if list.CNIVersion == "1.1.0" {
		attachments := []map[string]string{}
		for k := range valid {
			attachments = append(attachments, map[string]string{"containerID": k[0], "ifname": k[1]})
		}
		extra := map[string]interface{}{"cni.dev/valid-attachments": attachments, "cni.dev/attachments": attachments}
		if err := execEach(ctx, paths, list, "GC", extra); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
