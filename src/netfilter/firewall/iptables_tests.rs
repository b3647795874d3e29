use super::*;

#[test]
fn accepted_reads_address_rules_only() {
    let text = "*filter\n:CNI-FORWARD - [0:0]\n\
            -A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j CNI-ADMIN\n\
            -A CNI-FORWARD -d 10.22.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n\
            -A CNI-FORWARD -s 10.22.0.5/32 -j ACCEPT\n\
            -A CNI-FORWARD -s fd00::6/128 -j ACCEPT\n\
            -A CNI-FORWARD -s 10.0.0.0/8 -j ACCEPT\n\
            -A CNI-FORWARD -s 10.22.0.7/32 -j DROP\n";
    let got = accepted(&Saved::parse(text));
    let want: Vec<IpNet> = ["10.22.0.5/32", "fd00::6/128"]
        .iter()
        .map(|s| s.parse().expect("net"))
        .collect();
    assert_eq!(got, want);
}
