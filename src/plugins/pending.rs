//! Stand-in for a plugin not built yet: VERSION works (via the dispatcher),
//! every other verb fails with a clear CNI error instead of doing half the job.

use crate::cni::{CniResult, Code, Error, Invocation, NetResult, Plugin};

pub struct Pending {
    pub name: &'static str,
}

impl Pending {
    fn unavailable(&self, code: Code) -> Error {
        Error::new(
            code,
            format!(
                "the {} plugin is not implemented in this cni-multi build",
                self.name
            ),
        )
    }
}

impl Plugin for Pending {
    fn add(&self, _: &Invocation) -> CniResult<NetResult> {
        Err(self.unavailable(Code::Internal))
    }
    fn del(&self, _: &Invocation) -> CniResult<()> {
        Err(self.unavailable(Code::Internal))
    }
    fn check(&self, _: &Invocation) -> CniResult<()> {
        Err(self.unavailable(Code::Internal))
    }
    fn gc(&self, _: &Invocation) -> CniResult<()> {
        Err(self.unavailable(Code::Internal))
    }
    fn status(&self, _: &Invocation) -> CniResult<()> {
        Err(self.unavailable(Code::NotAvailable))
    }
}
