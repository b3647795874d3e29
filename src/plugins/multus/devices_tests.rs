use super::*;

#[test]
fn the_checkpoint_gives_the_pods_devices_in_both_formats() {
    let dir = std::env::temp_dir().join(format!("cni-multi-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("kubelet_internal_checkpoint");
    std::fs::write(
        &path,
        r#"{"Data":{"PodDeviceEntries":[
                {"PodUID":"pod-a","ContainerName":"c1","ResourceName":"example.com/pool",
                 "DeviceIDs":{"0":["0000:af:00.2"],"1":["0000:af:00.3"]},"AllocResp":"x"},
                {"PodUID":"pod-b","ContainerName":"c1","ResourceName":"example.com/pool",
                 "DeviceIDs":{"0":["0000:af:00.4"]}},
                {"PodUID":"pod-a","ContainerName":"c2","ResourceName":"example.com/old",
                 "DeviceIDs":["0000:01:00.1", 7]}],
              "RegisteredDevices":{}},"Checksum":1}"#,
    )
    .expect("write");
    let a = kubelet_allocation(&path, "pod-a");
    assert_eq!(a["example.com/pool"], ["0000:af:00.2", "0000:af:00.3"]);
    assert_eq!(a["example.com/old"], ["0000:01:00.1"]);
    assert_eq!(kubelet_allocation(&path, "pod-b").len(), 1);
    assert!(kubelet_allocation(&path, "").is_empty());
    assert!(kubelet_allocation(&dir.join("absent"), "pod-a").is_empty());
    std::fs::write(&path, "{").expect("write");
    assert!(kubelet_allocation(&path, "pod-a").is_empty());
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        dp_device_info_path("example.com/pool", "0000:af:00.2"),
        "/var/run/k8s.cni.cncf.io/devinfo/dp/example.com-pool-0000:af:00.2-device.json"
    );
}
