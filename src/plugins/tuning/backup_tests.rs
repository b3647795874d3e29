use super::*;

#[test]
fn backups_use_the_reference_layout() {
    let b = Backup {
        mac: "aa:bb:cc:dd:ee:ff".into(),
        promisc: Some(false),
        mtu: 1500,
        allmulti: None,
        tx_qlen: Some(1000),
        network: "net".into(),
        ..Backup::default()
    };
    let mut text = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut text,
        serde_json::ser::PrettyFormatter::with_indent(b" "),
    );
    b.serialize(&mut ser).expect("encode");
    assert_eq!(
        String::from_utf8_lossy(&text),
        "{\n \"mac\": \"aa:bb:cc:dd:ee:ff\",\n \"promisc\": false,\n \"mtu\": 1500,\n \"txQLen\": 1000,\n \"network\": \"net\"\n}"
    );
}
