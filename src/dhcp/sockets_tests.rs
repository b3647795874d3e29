use super::*;

#[test]
fn the_filter_accepts_dhcp_replies_only() {
    // Run the program by hand over the packets it is meant for.
    fn run(packet: &[u8]) -> u32 {
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        let byte = |at: usize| u32::from(*packet.get(at).unwrap_or(&0));
        let half = |at: usize| byte(at) << 8 | byte(at + 1);
        loop {
            let i = FILTER[pc];
            pc += 1;
            match i.code {
                0x30 => a = byte(i.k as usize),
                0x28 => a = half(i.k as usize),
                0xb1 => x = 4 * (byte(i.k as usize) & 0xf),
                0x48 => a = half((x + i.k) as usize),
                0x15 => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                0x45 => pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf }),
                0x06 => return i.k,
                other => panic!("opcode {other:#x}"),
            }
        }
    }
    let dhcp = wire::ipv4_udp(
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::BROADCAST,
        67,
        68,
        b"x",
    );
    assert_eq!(run(&dhcp), 0xffff);
    let other_port = wire::ipv4_udp(Ipv4Addr::LOCALHOST, Ipv4Addr::BROADCAST, 67, 69, b"x");
    assert_eq!(run(&other_port), 0);
    let mut fragment = dhcp.clone();
    fragment[6] = 0x20; // more fragments
    assert_eq!(run(&fragment), 0);
    let mut tcp = dhcp.clone();
    tcp[9] = 6;
    assert_eq!(run(&tcp), 0);
    // IP options move the UDP header.
    let mut with_options = dhcp[..20].to_vec();
    with_options[0] = 0x46;
    with_options.extend_from_slice(&[1, 1, 1, 0]);
    with_options.extend_from_slice(&dhcp[20..]);
    assert_eq!(run(&with_options), 0xffff);
}
