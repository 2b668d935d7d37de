//! The simulator's fault plan: each worker invocation and each operator's
//! decision has its own, which counts its port calls and deals the faults a
//! step planned by call number (a crash, a lost answer, a refused call, a
//! pause) through the [`Faulty`](crate::faults::Faulty) wrappers.

use std::{
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use hookgate_core::{
    action::ActionRequest,
    destination::{Destination, Strategy},
    failure::Failure,
};

use super::crm::SimCrm;
use crate::{
    LoseAnswers,
    faults::{Call, Fate, FaultPlan, LoseAnswersOf},
};

/// Where one invocation's faults fall, by port-call number (0 = the first).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    pub crash_at: Option<u32>,
    pub lose_answer_at: Option<u32>,
    pub fail_at: Option<u32>,
    /// A bit per port call (bit 0 = the first): pause before each one set.
    pub pauses: u8,
}

#[derive(Debug, Default)]
struct State {
    calls: u32,
    /// The call a pause stopped before, while it is stopped.
    paused: Option<Call>,
    crashed: bool,
    /// CRM tasks this invocation's creates made.
    made: u32,
}

/// The faults of one invocation or decision; `fired` is shared by every
/// plan of a run.
#[derive(Debug)]
pub struct CallPlan {
    faults: Faults,
    state: Mutex<State>,
    fired: Arc<Mutex<Fired>>,
}

/// The faults that did fire (a planned one past the last call does not).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    pub crashes: u32,
    pub lost_answers: u32,
    pub failures: u32,
    pub pauses: u32,
}

impl CallPlan {
    /// The plan of one invocation.
    pub fn new(faults: Faults, fired: Arc<Mutex<Fired>>) -> CallPlan {
        CallPlan {
            faults,
            state: Mutex::default(),
            fired,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The call the invocation is stopped before, if a pause stopped it.
    pub fn paused(&self) -> Option<Call> {
        self.lock().paused
    }

    /// The port call a planned crash stopped it before, if one did.
    pub fn crashed(&self) -> Option<u32> {
        self.lock()
            .crashed
            .then_some(self.faults.crash_at)
            .flatten()
    }

    /// CRM tasks this invocation made.
    pub fn made(&self) -> u32 {
        self.lock().made
    }
}

impl FaultPlan for CallPlan {
    fn next(&self) -> Fate {
        let mut state = self.lock();
        let call = state.calls;
        state.calls += 1;
        let mut fired = self.fired.lock().unwrap_or_else(|e| e.into_inner());
        if self.faults.crash_at == Some(call) {
            fired.crashes += 1;
            state.crashed = true;
            Fate::Crash
        } else if self.faults.lose_answer_at == Some(call) {
            fired.lost_answers += 1;
            Fate::LoseAnswer
        } else if self.faults.fail_at == Some(call) {
            fired.failures += 1;
            Fate::Fail
        } else if call < 8 && self.faults.pauses & (1 << call) != 0 {
            fired.pauses += 1;
            Fate::Pause
        } else {
            Fate::Proceed
        }
    }

    /// How many port calls it has made or is paused before.
    fn calls(&self) -> u32 {
        self.lock().calls
    }

    /// The simulator polls the invocation again to resume it.
    fn pause(&self, call: Call) -> impl Future<Output = ()> + Send {
        Paused {
            plan: self,
            call,
            stopped: false,
        }
    }
}

/// A lost answer of a memory port's conditional write is its own replay.
impl<T: LoseAnswers> LoseAnswersOf<T> for CallPlan {
    fn lose_answer(&self, port: &T, skip: u32) {
        port.lose_answer_after(skip, 1);
    }
}

/// Pending at its first poll (the plan shows the pause), ready at the next.
struct Paused<'a> {
    plan: &'a CallPlan,
    call: Call,
    stopped: bool,
}

impl Future for Paused<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.stopped {
            self.plan.lock().paused = None;
            return Poll::Ready(());
        }
        self.stopped = true;
        self.plan.lock().paused = Some(self.call);
        // Ready to go on at the next poll: a batch's stream (the core's
        // `run_batch`) polls again only what was woken.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A destination's simulated CRM that counts, on its invocation's plan,
/// the tasks its creates made (a task the model forbade shows there).
#[derive(Debug, Clone)]
pub struct Counted {
    pub crm: SimCrm,
    pub plan: Arc<CallPlan>,
}

impl Destination for Counted {
    fn strategy(&self) -> Strategy {
        self.crm.strategy()
    }

    async fn create(&self, request: &ActionRequest) -> Result<String, Failure> {
        let before = self.crm.made();
        let answer = self.crm.create(request).await;
        self.plan.lock().made += self.crm.made() - before;
        answer
    }

    async fn lookup(&self, request: &ActionRequest) -> Result<Option<String>, Failure> {
        self.crm.lookup(request).await
    }

    fn paced(&self) -> bool {
        self.crm.paced()
    }

    async fn admit(&self, max_wait: Duration) -> Option<Duration> {
        self.crm.admit(max_wait).await
    }
}
