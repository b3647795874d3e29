use super::*;

#[test]
fn the_table_shows_every_row_with_its_state_and_why() {
    let rows = vec![
        json!({"network": "n", "containerId": "c1", "ifname": "eth0", "netns": "/run/netns/a",
               "netnsCached": true, "addresses": ["10.0.0.2/24", "fd00::2/64"],
               "state": "alive", "cacheDir": "/var/lib/cni", "file": "f"}),
        json!({"network": "n", "containerId": "c2", "ifname": "eth0", "netns": "",
               "netnsCached": false, "addresses": [], "state": "unknown",
               "reason": "no netns", "cacheDir": "/var/lib/cni", "file": "g"}),
        json!({"state": "unreadable", "reason": "not JSON", "cacheDir": "/x",
               "file": "/x/results/bad"}),
    ];
    let text = table(&rows);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "NETWORK  CONTAINER  IFNAME  NETNS         ADDRESSES               CACHE         STATE"
    );
    assert_eq!(
        lines[1],
        "n        c1         eth0    /run/netns/a  10.0.0.2/24,fd00::2/64  /var/lib/cni  alive"
    );
    assert!(
        lines[2].ends_with("/var/lib/cni  unknown: no netns"),
        "{text}"
    );
    assert!(
        lines[3].starts_with("-        -          -       -             -")
            && lines[3].ends_with("/x            unreadable: /x/results/bad: not JSON"),
        "{text}"
    );
}
