use super::*;

#[test]
fn roff_is_escaped() {
    assert_eq!(esc(".x\n'y\na\\b-c"), "\\&.x\n\\&'y\na\\eb\\-c");
}

#[test]
fn every_page_names_itself_and_every_option() {
    let pages = pages();
    let files: Vec<&str> = pages.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        files,
        [
            "cni-multi.1",
            "cni-multi-cnitool.1",
            "cni-multi-install.1",
            "flanneld.8",
            "cni-multi-dhcp-daemon.8"
        ]
    );
    for (file, section, words, cmd) in &pages {
        let text = page(cmd, words, *section);
        assert!(
            text.starts_with(&format!(
                ".TH \"{}\" \"{section}\"",
                esc(&words.join("-").to_uppercase())
            )),
            "{file}"
        );
        assert!(
            text.contains(&format!(".SH NAME\n{} \\- ", esc(&words.join("-")))),
            "{file}"
        );
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(l) = arg.get_long() {
                assert!(
                    text.contains(&format!("\\fB\\-\\-{}\\fR", esc(l))),
                    "{file} lacks --{l}"
                );
            }
        }
    }
}
