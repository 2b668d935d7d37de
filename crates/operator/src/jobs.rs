//! Approvals carried out in the background, one item at a time at the
//! console's rate, with every item's result kept for the job's page: an
//! operator sees the progress, and a plan cut short (a refused item, a store
//! failure) shows exactly which items were decided and which were not.

use std::sync::Mutex;

use crate::decisions::DecisionError;

/// What became of one item of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Not reached yet.
    Waiting,
    /// Its approval is under way.
    Running,
    /// Decided: the approval's own words.
    Approved(String),
    /// Not approved: why.
    Refused(String),
    /// Its approval failed on a store or the queue: it may be left
    /// APPROVED, which approving it again finishes. Why.
    Unknown(String),
}

impl Step {
    /// What became of an approval that answered `result` (`Ok`: what it did,
    /// in words): approved; approved too when its answer was lost and it was
    /// found decided by this caller; unknown when a store, the queue or the
    /// ops API did not answer; refused otherwise (why).
    pub fn of(result: Result<String, DecisionError>) -> Self {
        match result {
            Ok(words) => Self::Approved(words),
            Err(e @ DecisionError::DecidedByYou { .. }) => Self::Approved(e.to_string()),
            Err(e) if e.is_unavailable() => Self::Unknown(e.to_string()),
            Err(e) => Self::Refused(e.to_string()),
        }
    }
}

/// One approval plan being carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: usize,
    pub who: String,
    pub reason: String,
    /// The plan's items, in order, and what became of each.
    pub steps: Vec<(String, Step)>,
}

impl Job {
    pub fn done(&self) -> usize {
        self.steps
            .iter()
            .filter(|(_, s)| !matches!(s, Step::Waiting | Step::Running))
            .count()
    }

    pub fn finished(&self) -> bool {
        self.done() == self.steps.len()
    }

    pub fn refused(&self) -> usize {
        self.steps
            .iter()
            .filter(|(_, s)| matches!(s, Step::Refused(_)))
            .count()
    }
}

/// The jobs of this console process.
#[derive(Debug, Default)]
pub struct Jobs(Mutex<Vec<Job>>);

impl Jobs {
    /// A new job for `ids`; its id.
    pub fn start(&self, who: String, reason: String, ids: Vec<String>) -> usize {
        let mut jobs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let id = jobs.len() + 1;
        jobs.push(Job {
            id,
            who,
            reason,
            steps: ids.into_iter().map(|i| (i, Step::Waiting)).collect(),
        });
        id
    }

    pub fn record(&self, job: usize, index: usize, step: Step) {
        let mut jobs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = jobs
            .get_mut(job.wrapping_sub(1))
            .and_then(|j| j.steps.get_mut(index))
        {
            slot.1 = step;
        }
    }

    /// Marks every item `job` has not reached as refused with `why` (its
    /// task ended without deciding them).
    pub fn abandon(&self, job: usize, why: &str) {
        let mut jobs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(job) = jobs.get_mut(job.wrapping_sub(1)) {
            for (_, step) in &mut job.steps {
                if matches!(step, Step::Waiting | Step::Running) {
                    *step = Step::Refused(why.to_owned());
                }
            }
        }
    }

    /// Whether an approval is under way in any job.
    pub fn running(&self) -> bool {
        let jobs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        jobs.iter()
            .any(|j| j.steps.iter().any(|(_, s)| *s == Step::Running))
    }

    /// The jobs with items not reached yet.
    pub fn unfinished(&self) -> Vec<Job> {
        let jobs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        jobs.iter().filter(|j| !j.finished()).cloned().collect()
    }

    pub fn get(&self, job: usize) -> Option<Job> {
        let jobs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        jobs.get(job.wrapping_sub(1)).cloned()
    }
}

/// A job cut short (`what` says how: "console stopped during approval 3"),
/// as the operator reads it: what was decided, and every item that was not.
pub fn report(job: &Job, what: &str) -> String {
    let mut out = format!(
        "{what} ({} of {} items reached):",
        job.done(),
        job.steps.len()
    );
    for (id, step) in &job.steps {
        let line = match step {
            Step::Waiting => "NOT decided (left as it was)".to_owned(),
            Step::Running => format!(
                "outcome unknown (its approval was under way): see hookgate triage show {id}"
            ),
            Step::Approved(what) => format!("approved: {what}"),
            Step::Refused(why) => format!("not approved: {why}"),
            Step::Unknown(why) => format!(
                "outcome unknown ({why}): see hookgate triage show {id}; approving it again finishes it"
            ),
        };
        out.push_str(&format!("\n  {id}: {line}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_or_failed_job_names_every_item_it_did_not_decide() {
        let jobs = Jobs::default();
        let id = jobs.start("me".into(), "why".into(), vec!["a".into(), "b".into()]);
        jobs.record(id, 0, Step::Approved("re-queued".into()));
        let stopped = jobs.unfinished();
        assert_eq!(stopped.len(), 1);
        assert_eq!(
            report(&stopped[0], "console stopped during approval 1"),
            "console stopped during approval 1 (1 of 2 items reached):\n  a: approved: re-queued\n  b: NOT decided (left as it was)"
        );
        jobs.record(id, 1, Step::Running);
        assert!(jobs.running());
        assert!(report(&jobs.unfinished()[0], "stopped").ends_with(
            "b: outcome unknown (its approval was under way): see hookgate triage show b"
        ));
        jobs.abandon(id, "task failed");
        assert!(!jobs.running());
        assert_eq!(
            jobs.get(id).unwrap().steps[1].1,
            Step::Refused("task failed".into())
        );
        assert_eq!(
            jobs.get(id).unwrap().steps[0].1,
            Step::Approved("re-queued".into())
        );
        assert!(jobs.unfinished().is_empty());
    }

    #[test]
    fn a_job_counts_what_is_decided_and_what_was_refused() {
        let jobs = Jobs::default();
        let id = jobs.start("me".into(), "why".into(), vec!["a".into(), "b".into()]);
        assert_eq!(id, 1);
        jobs.record(id, 0, Step::Refused("rejected already".into()));
        let job = jobs.get(id).unwrap();
        assert_eq!((job.done(), job.refused(), job.finished()), (1, 1, false));
        jobs.record(id, 1, Step::Approved("re-queued".into()));
        assert!(jobs.get(id).unwrap().finished());
        assert_eq!(jobs.get(0), None);
        assert_eq!(jobs.get(2), None);
        jobs.record(9, 0, Step::Waiting);
        assert!(jobs.unfinished().is_empty());
        assert_eq!(
            jobs.get(id).unwrap().steps[1].1,
            Step::Approved("re-queued".into())
        );
    }
}
