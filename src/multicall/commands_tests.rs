use super::*;

#[test]
fn the_tree_holds_every_first_argument_dispatch_takes() {
    let mut top = top();
    top.build();
    let names: Vec<&str> = top.get_subcommands().map(|c| c.get_name()).collect();
    let own = SUBCOMMANDS.iter().filter(|s| s.words.len() == 1);
    for name in own
        .map(|s| s.words[0])
        .chain(PLUGINS.iter().map(Entry::name))
    {
        assert!(names.contains(&name), "{name} missing: {names:?}");
    }
    let dhcp = top.find_subcommand("dhcp").expect("dhcp");
    assert!(dhcp.find_subcommand("daemon").is_some());
    let cnitool = top.find_subcommand("cnitool").expect("cnitool");
    assert!(cnitool.find_subcommand("add").is_some());
}
