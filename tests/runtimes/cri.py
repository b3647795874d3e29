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

STUB_DIR holds cri_api_pb2*.py, generated from cri_api.proto by grpc_tools.protoc.
Errors print "CODE: details" on stderr (the CNI error text is in the details) and
exit 1. Every call has a deadline, so a hung runtime fails instead of blocking.
"""
import argparse
import json
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
    args = p.parse_args()

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
