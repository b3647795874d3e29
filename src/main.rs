//! Dispatch only: everything lives in the library.

fn main() {
    std::process::exit(cni_multi::multicall::main_with_args(
        std::env::args_os().collect(),
    ));
}
