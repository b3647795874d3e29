use super::*;

#[test]
fn mirred_targets_of_a_dumped_u32_filter() {
    let mut mirred = Vec::new();
    for v in [0i32, 0, TC_ACT_STOLEN, 0, 0, TCA_EGRESS_REDIR, 42] {
        mirred.extend_from_slice(&v.to_ne_bytes());
    }
    let filter = |index| {
        Body::new(
            &TcMsg {
                index,
                handle: 0x800,
                parent: INGRESS_QDISC,
                ..TcMsg::default()
            }
            .bytes(),
        )
        .str(TCA_KIND, "u32")
        .nest(TCA_OPTIONS, |o| {
            o.u32(TCA_U32_CLASSID, make_handle(1, 1))
                .attr(TCA_U32_SEL, &[0u8; 32])
                .nest(TCA_U32_ACT, |acts| {
                    acts.nest(FIRST_ACTION, |a| {
                        a.str(TCA_ACT_KIND, "mirred")
                            .nest(TCA_ACT_OPTIONS, |m| m.attr(TCA_MIRRED_PARMS, &mirred))
                    })
                })
        })
        .into_bytes()
    };
    assert_eq!(mirred_targets(&filter(7), 7), vec![42]);
    // Another link's filter, a filter without actions, a short message.
    assert!(mirred_targets(&filter(8), 7).is_empty());
    let bare = Body::new(
        &TcMsg {
            index: 7,
            ..TcMsg::default()
        }
        .bytes(),
    )
    .str(TCA_KIND, "u32")
    .into_bytes();
    assert!(mirred_targets(&bare, 7).is_empty());
    assert!(mirred_targets(&[0u8; 4], 7).is_empty());
}

#[test]
fn handles_and_headers() {
    assert_eq!(make_handle(1, 0), 0x0001_0000);
    assert_eq!(INGRESS_QDISC, 0xffff_0000);
    assert_eq!(PARENT_INGRESS_FILTERS, 0xffff_fff2);
    assert!(tick_in_usec() > 0.0);
}
