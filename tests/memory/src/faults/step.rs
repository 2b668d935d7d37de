//! The integration harness's plan: the worker dies once at a named step
//! boundary, by a panic. A panic inside a spawned task is a faithful crash:
//! the attempt stops there, nothing after it is written, the message is not
//! deleted and the lease stays until it expires.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{FaultPlan, LoseAnswersOf};

/// The worker's step boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The ledger reservation is written; nothing else.
    AfterReserve,
    /// The CRM request went out (and committed); the answer never arrived.
    AfterCrmSent,
    /// The CRM answered with the task id; the ledger does not know yet.
    AfterCrmAnswered,
    /// The ledger says COMPLETED; the inbox record is not settled.
    AfterLedgerWrite,
}

/// Crashes the attempt once, by a panic, when it reaches `step`: shared by
/// every port of the worker it wraps, so only the first port there fires.
#[derive(Debug)]
pub struct StepCrash {
    step: Step,
    armed: AtomicBool,
}

impl StepCrash {
    /// Armed to crash at `step`.
    pub fn new(step: Step) -> Self {
        StepCrash {
            step,
            armed: AtomicBool::new(true),
        }
    }
}

impl FaultPlan for StepCrash {
    fn after(&self, step: Step) -> bool {
        self.step == step && self.armed.swap(false, Ordering::SeqCst)
    }

    fn crash(&self) {
        panic!("injected crash at {:?}", self.step);
    }
}

/// It deals no lost answer, so any port will do.
impl<T> LoseAnswersOf<T> for StepCrash {
    fn lose_answer(&self, _port: &T, _skip: u32) {
        unreachable!("a step crash loses no answer");
    }
}
