//! Dispatch only: everything lives in the library.

/// One CNI call per process: see `alloc` for why not the system allocator.
#[global_allocator]
static ALLOCATOR: cni_multi::alloc::Pool = cni_multi::alloc::Pool::new();

fn main() {
    // The detached delete forks; this keeps the child's allocator usable.
    ALLOCATOR.install_fork_handlers();
    std::process::exit(cni_multi::multicall::main_with_args(
        std::env::args_os().collect(),
    ));
}
