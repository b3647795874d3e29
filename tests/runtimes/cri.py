#!/usr/bin/env python3
"""A minimal CRI client (runtime.v1 over gRPC) that drives pods as kubelet does.

Usage: cri.py --sock SOCKET --gen STUB_DIR COMMAND ...
  version [--wait SECONDS]   runtime name and version (retries until the socket answers)
  image IMAGE                the image's id, if the CRI image service knows it
  run-pod NAME --image IMAGE [--host-port HOST:CONTAINER] [--bandwidth RATE] [--log-dir DIR]
                             RunPodSandbox, then CreateContainer + StartContainer of a
                             web server ("hello from NAME" on port 80); prints
                             "SANDBOX_ID CONTAINER_ID"
  pod SANDBOX_ID             PodSandboxStatus: lines "state S", "ip A" (each), "netns PATH"
  rm-pod SANDBOX_ID          stop + remove its containers, then StopPodSandbox, RemovePodSandbox
  list                       every sandbox id
  exec CONTAINER_ID CMD...   ExecSync; prints stdout, exits with the command's code
  run-manifest MANIFEST --log-dir DIR [--without PATH]... [--private-propagation]
               [--configmap NAME=DIR]... [--pod-dir DIR] [--init-timeout SECONDS]
                             the pod of the one DaemonSet in MANIFEST (a Kubernetes
                             YAML file), run as kubelet runs it (see manifest_pod):
                             its init containers one by one, each to exit 0, then
                             its containers; prints "sandbox ID", then
                             "init NAME ID" / "container NAME ID" per container
  status CONTAINER_ID        ContainerStatus: lines "state S", "exit N", "log PATH", "pid P"
  log CONTAINER_ID [--stream stdout|stderr]
                             the messages of its CRI log file (of one stream)

STUB_DIR holds cri_api_pb2*.py, generated from cri_api.proto by grpc_tools.protoc.
Errors print "CODE: details" on stderr (the CNI error text is in the details) and
exit 1. Every call has a deadline, so a hung runtime fails instead of blocking.
"""
import argparse
import json
import os
import sys
import time
import uuid

CALL_TIMEOUT = 90  # seconds; RunPodSandbox includes the CNI ADD of the whole chain

NS = None  # the generated messages module, set in main()


def server_command(name):
    # PID 1 of the container: httpd in the background, exit 0 on SIGTERM so
    # StopContainer returns without waiting for its grace period.
    script = ("mkdir -p /tmp/www && echo 'hello from %s' > /tmp/www/index.html && "
              "httpd -f -p 80 -h /tmp/www & trap 'exit 0' TERM; wait" % name)
    return ["/bin/sh", "-c", script]


def namespaces():
    # kubelet's default: the pod's network and IPC namespaces, a PID namespace per container.
    return NS.NamespaceOption(network=NS.POD, pid=NS.CONTAINER, ipc=NS.POD)


def sandbox_config(args):
    annotations = {}
    if args.bandwidth:
        annotations["kubernetes.io/ingress-bandwidth"] = args.bandwidth
        annotations["kubernetes.io/egress-bandwidth"] = args.bandwidth
    ports = []
    if args.host_port:
        host, container = (int(p) for p in args.host_port.split(":"))
        ports.append(NS.PortMapping(protocol=NS.TCP, container_port=container, host_port=host))
    return NS.PodSandboxConfig(
        metadata=NS.PodSandboxMetadata(name=args.name, uid=str(uuid.uuid4()), namespace="cnim", attempt=0),
        hostname=args.name,
        log_directory=args.log_dir or "",
        port_mappings=ports,
        labels={"app": args.name, "cnim-lane": "1"},
        annotations=annotations,
        linux=NS.LinuxPodSandboxConfig(
            security_context=NS.LinuxSandboxSecurityContext(namespace_options=namespaces())),
    )


def cmd_version(rt, _img, args):
    deadline = time.monotonic() + args.wait
    while True:
        try:
            v = rt.Version(NS.VersionRequest(version="v1"), timeout=5)
            print(v.runtime_name, v.runtime_version, v.runtime_api_version)
            return 0
        except Exception:  # noqa: BLE001 - socket not there yet, or not serving
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def cmd_image(_rt, img, args):
    r = img.ImageStatus(NS.ImageStatusRequest(image=NS.ImageSpec(image=args.image)), timeout=CALL_TIMEOUT)
    if not r.image.id:
        print("image %s not known to the CRI image service" % args.image, file=sys.stderr)
        return 1
    print(r.image.id)
    return 0


def cmd_run_pod(rt, _img, args):
    config = sandbox_config(args)
    sid = rt.RunPodSandbox(NS.RunPodSandboxRequest(config=config), timeout=CALL_TIMEOUT).pod_sandbox_id
    container = NS.ContainerConfig(
        metadata=NS.ContainerMetadata(name="server", attempt=0),
        image=NS.ImageSpec(image=args.image),
        command=server_command(args.name),
        labels={"app": args.name},
        log_path="server.log" if args.log_dir else "",
        linux=NS.LinuxContainerConfig(
            security_context=NS.LinuxContainerSecurityContext(namespace_options=namespaces())),
    )
    cid = rt.CreateContainer(NS.CreateContainerRequest(pod_sandbox_id=sid, config=container, sandbox_config=config),
                             timeout=CALL_TIMEOUT).container_id
    rt.StartContainer(NS.StartContainerRequest(container_id=cid), timeout=CALL_TIMEOUT)
    print(sid, cid)
    return 0


def netns_path(info):
    # containerd's verbose info is JSON with the sandbox's OCI spec, whose
    # network namespace path is the netns mount under its state dir.
    spec = json.loads(info.get("info", "{}")).get("runtimeSpec", {})
    for ns in spec.get("linux", {}).get("namespaces", []):
        if ns.get("type") == "network":
            return ns.get("path", "")
    return ""


def cmd_pod(rt, _img, args):
    r = rt.PodSandboxStatus(NS.PodSandboxStatusRequest(pod_sandbox_id=args.id, verbose=True), timeout=CALL_TIMEOUT)
    print("state", NS.PodSandboxState.Name(r.status.state))
    for ip in [r.status.network.ip] + [a.ip for a in r.status.network.additional_ips]:
        if ip:
            print("ip", ip)
    print("netns", netns_path(r.info) or "-")
    return 0


def cmd_rm_pod(rt, _img, args):
    # kubelet's order: containers first (graceful stop), then the sandbox,
    # whose stop runs the CNI DEL, then its removal (containerd: a second DEL).
    flt = NS.ContainerFilter(pod_sandbox_id=args.id)
    for c in rt.ListContainers(NS.ListContainersRequest(filter=flt), timeout=CALL_TIMEOUT).containers:
        rt.StopContainer(NS.StopContainerRequest(container_id=c.id, timeout=5), timeout=CALL_TIMEOUT)
        rt.RemoveContainer(NS.RemoveContainerRequest(container_id=c.id), timeout=CALL_TIMEOUT)
    rt.StopPodSandbox(NS.StopPodSandboxRequest(pod_sandbox_id=args.id), timeout=CALL_TIMEOUT)
    rt.RemovePodSandbox(NS.RemovePodSandboxRequest(pod_sandbox_id=args.id), timeout=CALL_TIMEOUT)
    return 0


def cmd_list(rt, _img, _args):
    for item in rt.ListPodSandbox(NS.ListPodSandboxRequest(), timeout=CALL_TIMEOUT).items:
        print(item.id)
    return 0


# --- a DaemonSet's pod, as kubelet runs it ------------------------------------
# What the lane cannot do as kubelet does is refused rather than skipped, so a
# manifest that grows a field the translation below ignores fails the lane
# instead of being tested without it.

# Pod and container fields that only steer scheduling or the API server.
POD_IGNORED = {"priorityClassName", "tolerations", "nodeSelector", "affinity", "terminationGracePeriodSeconds"}
POD_KNOWN = POD_IGNORED | {"hostNetwork", "hostPID", "hostIPC", "initContainers", "containers", "volumes",
                           "automountServiceAccountToken", "enableServiceLinks"}
CONTAINER_KNOWN = {"name", "image", "imagePullPolicy", "command", "args", "env", "securityContext",
                   "resources", "volumeMounts"}
SECURITY_KNOWN = {"privileged", "allowPrivilegeEscalation", "readOnlyRootFilesystem", "runAsUser",
                  "runAsGroup", "runAsNonRoot", "capabilities", "seccompProfile", "appArmorProfile"}
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
INIT_TIMEOUT = 120  # seconds an init container may run before the lane gives up on it


class ManifestError(Exception):
    pass


def refuse_unknown(what, obj, known):
    extra = sorted(set(obj) - known)
    if extra:
        raise ManifestError("%s: %s not translated by cri.py (add it to manifest_pod)" % (what, ", ".join(extra)))


def load_daemonset(path):
    import yaml  # noqa: E402 - from the lane's venv
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    sets = [d for d in docs if d.get("kind") == "DaemonSet"]
    if len(sets) != 1:
        raise ManifestError("%s: %d DaemonSets, want one" % (path, len(sets)))
    return sets[0]


def cpu_millis(q):
    q = str(q)
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def memory_bytes(q):
    q = str(q)
    for suffix, mult in [("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("k", 10**3), ("M", 10**6), ("G", 10**9)]:
        if q.endswith(suffix):
            return int(q[:-len(suffix)]) * mult
    return int(q)


def profile(kind, spec):
    # seccompProfile / appArmorProfile {type, localhostProfile} -> SecurityProfile
    types = {"RuntimeDefault": NS.SecurityProfile.RuntimeDefault, "Unconfined": NS.SecurityProfile.Unconfined,
             "Localhost": NS.SecurityProfile.Localhost}
    if spec.get("type") not in types:
        raise ManifestError("%s type %r" % (kind, spec.get("type")))
    return NS.SecurityProfile(profile_type=types[spec["type"]], localhost_ref=spec.get("localhostProfile", ""))


def pull_policy(c):
    # The API server's default: Always for :latest or no tag, else IfNotPresent.
    policy = c.get("imagePullPolicy")
    if policy is None:
        name = c["image"].split("@")[0].rsplit("/", 1)[-1]
        policy = "IfNotPresent" if ":" in name and not name.endswith(":latest") else "Always"
    if policy not in ("IfNotPresent", "Never"):
        raise ManifestError("container %s: imagePullPolicy %s: the lane has no registry" % (c["name"], policy))
    return policy


def host_path_volume(volume):
    # kubelet's hostPath types: DirectoryOrCreate makes the directory (0755),
    # Directory must be one; the mount source is the path as given (the
    # runtime follows symlinks, as /var/run -> /run).
    hp = volume["hostPath"]
    refuse_unknown("volume %s hostPath" % volume["name"], hp, {"path", "type"})
    path, kind = hp["path"], hp.get("type", "")
    if kind == "DirectoryOrCreate":
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif kind == "Directory":
        if not os.path.isdir(path):
            raise ManifestError("hostPath %s (type Directory) is not a directory" % path)
    elif kind:
        raise ManifestError("hostPath type %s not translated" % kind)
    return path


def config_map_volume(volume, uid, args):
    # kubelet's layout of a ConfigMap volume (its atomic writer): the keys'
    # files in a timestamped directory, `..data` a symlink to it, and each key
    # a symlink `KEY -> ..data/KEY`. The ConfigMap's data is the stand-in
    # directory given with --configmap NAME=DIR (its files are the keys); one
    # not given is a ConfigMap that does not exist: with `optional: true` the
    # volume is empty, else kubelet would not start the pod.
    cm = volume["configMap"]
    refuse_unknown("volume %s configMap" % volume["name"], cm, {"name", "optional", "defaultMode"})
    source = args.configmap.get(cm["name"])
    if source is None and not cm.get("optional", False):
        raise ManifestError("ConfigMap %s: no --configmap stand-in, and the volume is not optional" % cm["name"])
    if not args.pod_dir:
        raise ManifestError("volume %s: a ConfigMap volume needs --pod-dir" % volume["name"])
    keys = {}
    if source is not None:
        for key in sorted(os.listdir(source)):
            path = os.path.join(source, key)
            if not os.path.isfile(path) or os.path.islink(path):
                raise ManifestError("ConfigMap %s stand-in: %s is not a regular file" % (cm["name"], path))
            with open(path, "rb") as f:
                keys[key] = f.read()
    target = os.path.join(args.pod_dir, uid, "volumes", "kubernetes.io~configmap", volume["name"])
    stamp = "..%s" % time.strftime("%Y_%m_%d_%H_%M_%S.000000000", time.gmtime())
    os.makedirs(os.path.join(target, stamp), mode=0o755)
    for key, data in keys.items():
        with open(os.path.join(target, stamp, key), "wb") as f:
            f.write(data)
        os.chmod(os.path.join(target, stamp, key), cm.get("defaultMode", 0o644))
        os.symlink(os.path.join("..data", key), os.path.join(target, key))
    os.symlink(stamp, os.path.join(target, "..data"))
    return target


def volume_source(volume, uid, args):
    # (host path, always read-only): kubelet mounts ConfigMap volumes read-only
    # whatever the volumeMount says.
    refuse_unknown("volume %s" % volume.get("name"), volume, {"name", "hostPath", "configMap"})
    if "hostPath" in volume:
        return host_path_volume(volume), False
    if "configMap" in volume:
        return config_map_volume(volume, uid, args), True
    raise ManifestError("volume %s: only hostPath and configMap volumes are translated" % volume.get("name"))


def container_config(c, meta, namespaces, sources, args):
    """One container (init or not) as kubelet hands it to the runtime, and
    whether kubelet must check that its image's user is not root."""
    refuse_unknown("container %s" % c["name"], c, CONTAINER_KNOWN)
    pull_policy(c)
    sc = c.get("securityContext", {})
    refuse_unknown("securityContext of %s" % c["name"], sc, SECURITY_KNOWN)
    caps = sc.get("capabilities", {})
    refuse_unknown("capabilities of %s" % c["name"], caps, {"add", "drop"})
    if sc.get("runAsNonRoot") and sc.get("runAsUser") == 0:
        raise ManifestError("container %s: runAsNonRoot with runAsUser 0" % c["name"])
    csc = NS.LinuxContainerSecurityContext(
        capabilities=NS.Capability(add_capabilities=caps.get("add", []), drop_capabilities=caps.get("drop", [])),
        privileged=bool(sc.get("privileged", False)),
        namespace_options=namespaces,
        readonly_rootfs=bool(sc.get("readOnlyRootFilesystem", False)),
        no_new_privs=sc.get("allowPrivilegeEscalation") is False,
    )
    if "runAsUser" in sc:
        csc.run_as_user.value = sc["runAsUser"]
    if "runAsGroup" in sc:
        csc.run_as_group.value = sc["runAsGroup"]
    if "seccompProfile" in sc:
        csc.seccomp.CopyFrom(profile("seccompProfile", sc["seccompProfile"]))
        csc.seccomp_profile_path = {"RuntimeDefault": "runtime/default", "Unconfined": "unconfined"}.get(
            sc["seccompProfile"]["type"], "localhost/" + sc["seccompProfile"].get("localhostProfile", ""))
    apparmor = sc.get("appArmorProfile")
    annotation = meta.get("annotations", {}).get(APPARMOR_ANNOTATION + c["name"])
    if annotation:
        apparmor = {"runtime/default": {"type": "RuntimeDefault"}, "unconfined": {"type": "Unconfined"}}.get(
            annotation, {"type": "Localhost", "localhostProfile": annotation.removeprefix("localhost/")})
    if apparmor:
        csc.apparmor.CopyFrom(profile("appArmorProfile", apparmor))
        csc.apparmor_profile = annotation or ""

    resources = NS.LinuxContainerResources()
    res = c.get("resources", {})
    refuse_unknown("resources of %s" % c["name"], res, {"requests", "limits"})
    limits, requests = res.get("limits", {}), res.get("requests", {})
    refuse_unknown("limits of %s" % c["name"], limits, {"cpu", "memory"})
    refuse_unknown("requests of %s" % c["name"], requests, {"cpu", "memory"})
    if "cpu" in limits:
        resources.cpu_period = 100000
        resources.cpu_quota = cpu_millis(limits["cpu"]) * 100000 // 1000
    cpu_request = requests.get("cpu", limits.get("cpu"))
    resources.cpu_shares = max(2, cpu_millis(cpu_request) * 1024 // 1000) if cpu_request else 2
    if "memory" in limits:
        resources.memory_limit_in_bytes = memory_bytes(limits["memory"])

    propagation = {None: NS.PROPAGATION_PRIVATE, "None": NS.PROPAGATION_PRIVATE,
                   "HostToContainer": NS.PROPAGATION_HOST_TO_CONTAINER,
                   "Bidirectional": NS.PROPAGATION_BIDIRECTIONAL}
    mounts = []
    for vm in c.get("volumeMounts", []):
        refuse_unknown("volumeMount %s" % vm["name"], vm, {"name", "mountPath", "readOnly", "mountPropagation"})
        if any(vm["mountPath"] == p or vm["mountPath"].startswith(p.rstrip("/") + "/") for p in args.without):
            continue
        if vm["name"] not in sources:
            raise ManifestError("volumeMount %s names no volume" % vm["name"])
        host_path, always_readonly = sources[vm["name"]]
        prop = propagation[vm.get("mountPropagation")]
        mounts.append(NS.Mount(container_path=vm["mountPath"], host_path=host_path,
                               readonly=always_readonly or bool(vm.get("readOnly", False)),
                               propagation=NS.PROPAGATION_PRIVATE if args.private_propagation else prop))

    env = []
    for e in c.get("env", []):
        refuse_unknown("env %s" % e.get("name"), e, {"name", "value"})
        env.append(NS.KeyValue(key=e["name"], value=str(e.get("value", ""))))

    config = NS.ContainerConfig(
        metadata=NS.ContainerMetadata(name=c["name"], attempt=0),
        image=NS.ImageSpec(image=c["image"]),
        command=c.get("command", []),
        args=c.get("args", []),
        envs=env,
        mounts=mounts,
        labels=dict(meta.get("labels", {})),
        annotations=meta.get("annotations", {}),
        log_path="%s/0.log" % c["name"],
        linux=NS.LinuxContainerConfig(resources=resources, security_context=csc),
    )
    return config, bool(sc.get("runAsNonRoot")) and "runAsUser" not in sc


def manifest_pod(path, args):
    """The DaemonSet's pod as kubelet hands it to the runtime: (sandbox config,
    init containers, containers), each container a (config, check the image's
    user is not root) pair. Taken from the file: the pod's
    host namespaces, each container's image, command, args, env, mounts
    (hostPath with readOnly and mountPropagation; ConfigMap, from a stand-in
    directory, read-only), securityContext (capabilities, privileged, user and
    group, read-only root, no_new_privs, seccomp), the AppArmor annotation, and
    its CPU/memory limits and CPU request; init containers run first, one at a
    time, each to exit 0 (cmd_run_manifest).
    --without PATH (repeated) leaves out every volumeMount at PATH or below;
    --private-propagation keeps the mounts, none with propagation. Not emulated (kubelet's own
    additions, no field of the manifest): the service account token (the
    manifest turns it off), /etc/hosts and the termination log."""
    ds = load_daemonset(path)
    template = ds["spec"]["template"]
    meta, pod = template.get("metadata", {}), template["spec"]
    refuse_unknown("pod spec", pod, POD_KNOWN)
    if pod.get("automountServiceAccountToken", True):
        raise ManifestError("automountServiceAccountToken: the lane has no token to mount")
    if not pod.get("containers"):
        raise ManifestError("no containers")

    mode = {True: NS.NODE}
    namespaces = NS.NamespaceOption(network=mode.get(pod.get("hostNetwork", False), NS.POD),
                                    pid=mode.get(pod.get("hostPID", False), NS.CONTAINER),
                                    ipc=mode.get(pod.get("hostIPC", False), NS.POD))
    uid = str(uuid.uuid4())
    sources = {v["name"]: volume_source(v, uid, args) for v in pod.get("volumes", [])}
    inits = [container_config(c, meta, namespaces, sources, args) for c in pod.get("initContainers", [])]
    containers = [container_config(c, meta, namespaces, sources, args) for c in pod["containers"]]
    privileged = any(c.linux.security_context.privileged for c, _ in inits + containers)

    name = ds["metadata"]["name"] + "-" + uuid.uuid4().hex[:5]
    sandbox = NS.PodSandboxConfig(
        metadata=NS.PodSandboxMetadata(name=name, uid=uid,
                                       namespace=ds["metadata"].get("namespace", "default"), attempt=0),
        # kubelet names no hostname for a pod in the node's network (and UTS)
        # namespace: runc refuses to set one there.
        hostname="" if pod.get("hostNetwork") else name,
        log_directory=args.log_dir,
        labels=dict(meta.get("labels", {}), **{"cnim-lane": "1"}),
        annotations=meta.get("annotations", {}),
        linux=NS.LinuxPodSandboxConfig(security_context=NS.LinuxSandboxSecurityContext(
            namespace_options=namespaces, privileged=privileged)),
    )
    return sandbox, inits, containers


def check_image(img, container, non_root):
    # IfNotPresent/Never: the image must be on the node. runAsNonRoot without
    # runAsUser: kubelet refuses an image whose user is root, or not numeric.
    r = img.ImageStatus(NS.ImageStatusRequest(image=container.image), timeout=CALL_TIMEOUT)
    if not r.image.id:
        raise ManifestError("image %s is not on the node (no registry here)" % container.image.image)
    if non_root:
        if r.image.username and not r.image.HasField("uid"):
            raise ManifestError("container %s: runAsNonRoot, and its image's user %r is not numeric"
                                % (container.metadata.name, r.image.username))
        if r.image.uid.value == 0:
            raise ManifestError("container %s: runAsNonRoot, and its image runs as root" % container.metadata.name)


def wait_exited(rt, cid, timeout):
    deadline = time.monotonic() + timeout
    while True:
        s = rt.ContainerStatus(NS.ContainerStatusRequest(container_id=cid), timeout=CALL_TIMEOUT).status
        if s.state == NS.CONTAINER_EXITED:
            return s
        if time.monotonic() > deadline:
            raise ManifestError("container %s still %s after %d s" % (s.metadata.name, NS.ContainerState.Name(s.state),
                                                                      timeout))
        time.sleep(0.2)


def log_tail(path, lines=5):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(line.rstrip("\n").split(" ", 3)[-1] for line in f.readlines()[-lines:])
    except OSError as e:
        return str(e)


def cmd_run_manifest(rt, img, args):
    # Prints "sandbox ID", then "init NAME ID" and "container NAME ID" as each
    # starts; an init container that does not exit 0 fails the run (kubelet
    # would restart it), its pod left for rm-pod.
    try:
        sandbox, inits, containers = manifest_pod(args.manifest, args)
        for config, non_root in inits + containers:
            check_image(img, config, non_root)
    except (ManifestError, KeyError, ValueError, TypeError, OSError) as e:
        print("%s: %s" % (args.manifest, e), file=sys.stderr)
        return 1
    sid = rt.RunPodSandbox(NS.RunPodSandboxRequest(config=sandbox), timeout=CALL_TIMEOUT).pod_sandbox_id
    print("sandbox", sid, flush=True)
    for kind, configs in [("init", inits), ("container", containers)]:
        for config, _ in configs:
            cid = rt.CreateContainer(NS.CreateContainerRequest(pod_sandbox_id=sid, config=config,
                                                               sandbox_config=sandbox),
                                     timeout=CALL_TIMEOUT).container_id
            rt.StartContainer(NS.StartContainerRequest(container_id=cid), timeout=CALL_TIMEOUT)
            print(kind, config.metadata.name, cid, flush=True)
            if kind != "init":
                continue
            try:
                s = wait_exited(rt, cid, args.init_timeout)
            except ManifestError as e:
                print(str(e), file=sys.stderr)
                return 1
            if s.exit_code != 0:
                print("init container %s exited %d (%s): %s" % (config.metadata.name, s.exit_code, s.reason,
                                                                log_tail(s.log_path)), file=sys.stderr)
                return 1
    return 0


def cmd_status(rt, _img, args):
    r = rt.ContainerStatus(NS.ContainerStatusRequest(container_id=args.id, verbose=True), timeout=CALL_TIMEOUT)
    s = r.status
    print("state", NS.ContainerState.Name(s.state))
    print("exit", s.exit_code)
    print("log", s.log_path or "-")
    # containerd's verbose info: the task's PID (0 once it exited).
    print("pid", json.loads(r.info.get("info", "{}")).get("pid", 0))
    return 0


def cmd_log(rt, _img, args):
    # CRI log lines: "TIMESTAMP STREAM TAG MESSAGE", TAG P for a partial line
    # that the next one continues, F for a full one.
    s = rt.ContainerStatus(NS.ContainerStatusRequest(container_id=args.id), timeout=CALL_TIMEOUT).status
    out = []
    with open(s.log_path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 3)
            if len(parts) < 3 or (args.stream and parts[1] != args.stream):
                continue
            out.append((parts[3] if len(parts) > 3 else "") + ("" if parts[2] == "P" else "\n"))
    sys.stdout.write("".join(out))
    return 0


def cmd_exec(rt, _img, args):
    r = rt.ExecSync(NS.ExecSyncRequest(container_id=args.id, cmd=args.cmd, timeout=30), timeout=CALL_TIMEOUT)
    sys.stdout.write(r.stdout.decode(errors="replace"))
    sys.stderr.write(r.stderr.decode(errors="replace"))
    return r.exit_code


def main():
    global NS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sock", required=True, help="the runtime's CRI socket")
    p.add_argument("--gen", required=True, help="directory of the generated cri_api_pb2 modules")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("version")
    s.add_argument("--wait", type=float, default=0)
    s.set_defaults(fn=cmd_version)
    s = sub.add_parser("image")
    s.add_argument("image")
    s.set_defaults(fn=cmd_image)
    s = sub.add_parser("run-pod")
    s.add_argument("name")
    s.add_argument("--image", required=True)
    s.add_argument("--host-port", help="HOST:CONTAINER, tcp")
    s.add_argument("--bandwidth", help="ingress and egress annotation value, e.g. 1M")
    s.add_argument("--log-dir")
    s.set_defaults(fn=cmd_run_pod)
    for name, fn in [("pod", cmd_pod), ("rm-pod", cmd_rm_pod)]:
        s = sub.add_parser(name)
        s.add_argument("id")
        s.set_defaults(fn=fn)
    s = sub.add_parser("list")
    s.set_defaults(fn=cmd_list)
    s = sub.add_parser("exec")
    s.add_argument("id")
    s.add_argument("cmd", nargs="+")
    s.set_defaults(fn=cmd_exec)
    s = sub.add_parser("run-manifest")
    s.add_argument("manifest")
    s.add_argument("--log-dir", required=True)
    s.add_argument("--without", action="append", default=[], metavar="PATH",
                   help="leave out the volumeMounts at PATH or below it")
    s.add_argument("--private-propagation", action="store_true", help="no mount with propagation")
    s.add_argument("--configmap", action="append", default=[], metavar="NAME=DIR",
                   help="the ConfigMap NAME holds the files of DIR (else it does not exist)")
    s.add_argument("--pod-dir", help="where ConfigMap volumes are laid out, as kubelet's pods directory")
    s.add_argument("--init-timeout", type=float, default=INIT_TIMEOUT, help="seconds an init container may run")
    s.set_defaults(fn=cmd_run_manifest)
    s = sub.add_parser("status")
    s.add_argument("id")
    s.set_defaults(fn=cmd_status)
    s = sub.add_parser("log")
    s.add_argument("id")
    s.add_argument("--stream", choices=["stdout", "stderr"], help="only this stream's lines")
    s.set_defaults(fn=cmd_log)
    args = p.parse_args()
    if args.command == "run-manifest":
        pairs = [c.split("=", 1) for c in args.configmap]
        if any(len(pair) != 2 for pair in pairs):
            p.error("--configmap takes NAME=DIR")
        args.configmap = dict(pairs)

    sys.path.insert(0, args.gen)
    import grpc  # noqa: E402 - from the lane's venv
    import cri_api_pb2 as ns  # noqa: E402 - generated at run time
    import cri_api_pb2_grpc as svc  # noqa: E402

    NS = ns
    with grpc.insecure_channel("unix://" + args.sock) as channel:
        try:
            return args.fn(svc.RuntimeServiceStub(channel), svc.ImageServiceStub(channel), args)
        except grpc.RpcError as e:
            print("%s: %s" % (e.code().name, e.details()), file=sys.stderr)
            return 1


if __name__ == "__main__":
    sys.exit(main())
