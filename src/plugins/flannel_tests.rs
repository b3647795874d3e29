use super::*;

#[test]
fn subnet_env_rules() {
    let env = parse_subnet_env(
        "FLANNEL_NETWORK=10.1.0.0/16,10.1.0.0/16\nFLANNEL_SUBNET=10.1.17.1/24\nFLANNEL_MTU=1472\nFLANNEL_IPMASQ=true\n",
        "s",
    )
    .expect("valid");
    assert_eq!(env.networks.len(), 1);
    assert_eq!(
        env.subnet.map(|s| s.to_string()).as_deref(),
        Some("10.1.17.0/24")
    );
    assert!(env.ipmasq);
    let e = parse_subnet_env("FLANNEL_SUBNET=10.1.17.1/24\n", "s").expect_err("missing");
    assert!(
        e.msg.contains("FLANNEL_MTU")
            && e.msg.contains("FLANNEL_IPMASQ")
            && e.msg.contains("FLANNEL_NETWORK"),
        "{e}"
    );
    assert!(!parse_subnet_env("FLANNEL_NETWORK=10.1.0.0/16\nFLANNEL_SUBNET=10.1.17.1/24\nFLANNEL_MTU=1472\nFLANNEL_IPMASQ=yes\n", "s").expect("valid").ipmasq);
}
