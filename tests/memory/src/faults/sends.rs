//! The calls that leave the stores behind a plan: a decision's re-queue and
//! a destination's requests to its CRM.

use std::time::Duration;

use hookgate_core::{
    action::ActionRequest,
    destination::{Destination, Strategy},
    failure::{Failure, FailureKind},
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, QueueError},
};

use super::{Call, Fate, FaultPlan, Faulty, Step, die};

/// A decision's re-queue: refused (SQS down), or never made (a crash).
impl<Q: ActionQueue, P: FaultPlan> ActionQueue for Faulty<Q, P> {
    async fn send(&self, message: &QueueMessage, kind: MessageKind) -> Result<(), QueueError> {
        match self.plan.next() {
            Fate::Crash => die(&*self.plan).await,
            Fate::Fail => Err(QueueError("the simulated queue refused".into())),
            Fate::LoseAnswer => {
                // Sent, its answer lost, sent again: two copies queued.
                let _lost = self.inner.send(message, kind).await;
                self.inner.send(message, kind).await
            }
            Fate::Pause => {
                self.plan.pause(Call::Store).await;
                self.inner.send(message, kind).await
            }
            Fate::Proceed => self.inner.send(message, kind).await,
        }
    }

    /// Only the worker's host sends with a delay, on the plain queue.
    async fn send_after(
        &self,
        message: &QueueMessage,
        kind: MessageKind,
        delay: Duration,
    ) -> Result<(), QueueError> {
        self.inner.send_after(message, kind, delay).await
    }
}

/// The worker step a create's answer reached: the CRM answered with its
/// task, or the request went out and its answer never came.
fn reached(answer: &Result<String, Failure>) -> Option<Step> {
    match answer {
        Ok(_) => Some(Step::AfterCrmAnswered),
        Err(Failure {
            kind: FailureKind::OutcomeUnknown,
            ..
        }) => Some(Step::AfterCrmSent),
        Err(_) => None,
    }
}

/// A destination's create crashes *after* it reached the CRM (its effect
/// made, the attempt gone): the worst moment to die, whether the plan
/// dealt the crash before the call or kills the attempt at the step the
/// answer reached. A planned lost answer or failure is not applied to a
/// create: the simulator's CRM model deals those (`sim::crm::Mode`).
impl<D: Destination, P: FaultPlan> Destination for Faulty<D, P> {
    fn strategy(&self) -> Strategy {
        self.inner.strategy()
    }

    async fn create(&self, request: &ActionRequest) -> Result<String, Failure> {
        let fate = self.plan.next();
        if fate == Fate::Pause {
            self.plan.pause(Call::Crm).await;
        }
        let answer = self.inner.create(request).await;
        if fate == Fate::Crash || reached(&answer).is_some_and(|step| self.plan.after(step)) {
            return die(&*self.plan).await;
        }
        answer
    }

    async fn lookup(&self, request: &ActionRequest) -> Result<Option<String>, Failure> {
        match self.plan.next() {
            Fate::Crash => die(&*self.plan).await,
            Fate::Pause => {
                self.plan.pause(Call::Crm).await;
                self.inner.lookup(request).await
            }
            Fate::LoseAnswer => {
                let _lost = self.inner.lookup(request).await;
                self.inner.lookup(request).await
            }
            Fate::Fail => Err(Failure::retryable("the simulated CRM refused")),
            Fate::Proceed => self.inner.lookup(request).await,
        }
    }

    fn paced(&self) -> bool {
        self.inner.paced()
    }

    async fn admit(&self, max_wait: Duration) -> Option<Duration> {
        self.inner.admit(max_wait).await
    }
}
