use super::*;

#[test]
fn frames_carry_the_nfgenmsg() {
    let mut out = Vec::new();
    let header = NfGenMsg {
        family: 2,
        version: NFNETLINK_V0,
        res_id: 0x0a,
    };
    frame(&mut out, 0x0a06, NLM_F_REQUEST, 7, header, &[1, 2, 3]);
    assert_eq!(out.len() % 4, 0);
    let msgs: Vec<_> = wire::messages(&out).collect();
    assert_eq!(msgs.len(), 1);
    assert_eq!((msgs[0].ty, msgs[0].seq), (0x0a06, 7));
    assert_eq!(&msgs[0].payload[..7], &[2, 0, 0, 0x0a, 1, 2, 3]);
}
