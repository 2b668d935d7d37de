//! Fault injection at a service's port calls, one mechanism for the
//! simulator and the integration harness: [`Faulty`] wraps any port and
//! asks its [`FaultPlan`] before each call it counts, and after the worker's
//! steps, what happens there. The simulator's plan (`sim::faults::CallPlan`)
//! numbers the calls of one invocation or decision; the harness's,
//! [`StepCrash`], kills a worker once at a named step around the real
//! adapters.
//!
//! The fates: a crash (the attempt stops at that await and never goes on,
//! as when Lambda's process dies or its timeout cuts it: the plan's
//! [`FaultPlan::crash`] runs first, and the harness's panics inside its
//! spawned task), a lost answer (the call committed, its answer was lost,
//! and the SDK sent the same request again: the second answer is the one
//! seen), a failure (the store refused: the call wrote nothing and answered
//! an error) and a pause (the attempt stops before the call until it is
//! polled again, so other invocations run in between).
//!
//! A lost answer on a conditional write of the ledger or the triage table
//! goes through the port's own replay ([`LoseAnswersOf`], the memory ports'
//! [`crate::LoseAnswers`]), which sends the same write token again as the
//! SDK does; elsewhere the call is made twice.

// Product code by the layout's rules, as the simulator is: no function
// over 100 lines, which clippy counts.
#![warn(clippy::too_many_lines)]

mod sends;
mod step;
mod stores;

use std::{future::Future, sync::Arc};

use hookgate_core::ports::{Store, StoreError};

pub use step::{Step, StepCrash};

/// What a port call meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// It runs as it would.
    Proceed,
    /// The attempt dies before it (a CRM create: after it reached the CRM).
    Crash,
    /// It runs, its answer is lost, and it is sent again.
    LoseAnswer,
    /// The store refuses it.
    Fail,
    /// The attempt stops before it until it is polled again.
    Pause,
}

/// Which kind of call a pause stopped before: each is cut by its own timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A DynamoDB call (the SDK's operation timeout).
    Store,
    /// A CRM call (the destination's HTTP timeout).
    Crm,
}

/// What a [`Faulty`] port asks around its calls. Every method has the
/// fault-free answer as its default, so a plan says only where it strikes.
pub trait FaultPlan: Send + Sync {
    /// The fate of the next port call it counts.
    fn next(&self) -> Fate {
        Fate::Proceed
    }

    /// How many port calls it has counted (made, or paused before).
    fn calls(&self) -> u32 {
        0
    }

    /// Whether the attempt dies now that it reached `step`.
    fn after(&self, step: Step) -> bool {
        let _ = step;
        false
    }

    /// Runs as the attempt dies, before its call stops for good: a plan
    /// may panic here, as a process dies inside its spawned task.
    fn crash(&self) {}

    /// Stops the attempt once before a call of kind `call`: ready when it
    /// is polled again.
    fn pause(&self, call: Call) -> impl Future<Output = ()> + Send {
        let _ = call;
        std::future::ready(())
    }
}

/// How a plan loses the answer of a conditional write of the port `T`:
/// through the port's own replay, which sends the same write token again.
/// Only a plan that deals lost answers needs the port to support it.
pub trait LoseAnswersOf<T> {
    /// The conditional write after the next `skip` of `port` loses its
    /// answer, and is sent again.
    fn lose_answer(&self, port: &T, skip: u32);
}

/// A port behind a fault plan (shared by every port of one attempt).
#[derive(Debug)]
pub struct Faulty<T, P> {
    pub inner: T,
    pub plan: Arc<P>,
}

impl<T, P> Faulty<T, P> {
    /// `inner`, its calls asked of `plan`.
    pub fn new(inner: T, plan: Arc<P>) -> Self {
        Faulty { inner, plan }
    }
}

impl<T: Clone, P> Clone for Faulty<T, P> {
    fn clone(&self) -> Self {
        Faulty {
            inner: self.inner.clone(),
            plan: self.plan.clone(),
        }
    }
}

/// The attempt dies at this call: the plan's [`FaultPlan::crash`] runs, then
/// the call never answers.
async fn die<R, P: FaultPlan + ?Sized>(plan: &P) -> R {
    plan.crash();
    std::future::pending().await
}

/// What a store that refused a call answers.
fn refused() -> StoreError {
    StoreError::Unavailable {
        store: Store::Inbox,
        detail: "the simulated store refused the call".into(),
    }
}

/// Runs a store call as the plan says: never resolving (a crash before it),
/// twice (a lost answer: the retry's answer is returned), not at all (a
/// failure), or after a pause.
macro_rules! faulted {
    ($self:ident, $call:expr) => {{
        match $self.plan.next() {
            Fate::Crash => die(&*$self.plan).await,
            Fate::LoseAnswer => {
                let _lost = $call;
                $call
            }
            Fate::Fail => Err(refused()),
            Fate::Pause => {
                $self.plan.pause(Call::Store).await;
                $call
            }
            Fate::Proceed => $call,
        }
    }};
}

/// [`faulted!`] for a conditional write of a store that models the SDK's
/// retry itself: a lost answer replays the same write (its token) once.
macro_rules! replayed {
    ($self:ident, $call:expr) => {{
        match $self.plan.next() {
            Fate::Crash => die(&*$self.plan).await,
            Fate::LoseAnswer => {
                $self.plan.lose_answer(&$self.inner, 0);
                $call
            }
            Fate::Fail => Err(refused()),
            Fate::Pause => {
                $self.plan.pause(Call::Store).await;
                $call
            }
            Fate::Proceed => $call,
        }
    }};
}

use {faulted, replayed};
