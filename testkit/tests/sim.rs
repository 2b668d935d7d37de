//! The simulator under proptest: `SIM_CASES` scenarios (default 10,000)
//! from `SIM_SEED` (default fixed, so CI runs the same ones), each checked
//! against the reference model's invariants; a failure is shrunk to a short
//! scenario and printed with its trace. `make sim SEEDS=N` runs N.

use hookgate_core::destination::Strategy as CrmStrategy;
use hookgate_testkit::sim::{self, EVENTS, Op, Scenario, crm::Mode};
use proptest::{
    prelude::*,
    strategy::ValueTree,
    test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner},
};

fn op() -> impl Strategy<Value = Op> {
    let fault = proptest::option::weighted(0.3, 0..8u8);
    let lost = proptest::option::weighted(0.15, 0..8u8);
    prop_oneof![
        4 => (0..EVENTS).prop_map(Op::Deliver),
        5 => (any::<u8>(), fault, lost).prop_map(|(pick, crash_at, lose_answer_at)| Op::Work {
            pick,
            crash_at,
            lose_answer_at
        }),
        4 => (1..240u16).prop_map(Op::Advance),
        1 => prop_oneof![
            3 => Just(Mode::Healthy),
            2 => Just(Mode::Down),
            2 => Just(Mode::CommitThenDrop),
            1 => Just(Mode::DropBeforeCommit),
            1 => Just(Mode::Refuse),
        ]
        .prop_map(Op::Crm),
        1 => Just(Op::Sweep),
        1 => (any::<u8>(), proptest::bool::weighted(0.3))
            .prop_map(|(pick, reject)| Op::Decide { pick, reject }),
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop_oneof![Just(CrmStrategy::IdempotencyKey), Just(CrmStrategy::Lookup)],
        1..=5u32,
        proptest::collection::vec(op(), 1..60),
    )
        .prop_map(|(strategy, max_receives, ops)| Scenario {
            strategy,
            max_receives,
            ops,
        })
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runner(seed: u64, cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

#[test]
fn every_simulated_scenario_keeps_the_invariants() {
    let seed = env_u64("SIM_SEED", 20_261_201);
    let cases = u32::try_from(env_u64("SIM_CASES", 10_000)).unwrap_or(u32::MAX);
    let started = std::time::Instant::now();
    let total = std::cell::Cell::new(sim::Counts::default());
    let result = runner(seed, cases).run(&scenario(), |s| {
        let (_, c) = sim::run_counted(&s).map_err(TestCaseError::fail)?;
        total.set(total.get() + c);
        Ok(())
    });
    let elapsed = started.elapsed().as_secs_f64();
    match result {
        Ok(()) => {
            let t = total.get();
            eprintln!(
                "sim: {cases} scenarios from seed {seed} in {elapsed:.1} s ({:.0}/s): {t:?}",
                f64::from(cases) / elapsed
            );
            // Not vacuous: events were accepted and worked, faults fired.
            assert!(
                t.accepted_events > cases && t.completed_messages > cases / 2,
                "{t:?}"
            );
            assert!(
                t.crashes > cases / 10 && t.lost_answers > cases / 20,
                "{t:?}"
            );
            // Dead letters were triaged, the sweep re-queued, operators decided.
            assert!(
                t.dead_letters > cases / 100 && t.swept > cases / 100 && t.decisions > cases / 100,
                "{t:?}"
            );
        }
        Err(TestError::Fail(why, scenario)) => {
            panic!("seed {seed}: a scenario broke an invariant (shrunk):\n{scenario:#?}\n{why}")
        }
        Err(e) => panic!("seed {seed}: {e}"),
    }
}

#[test]
fn the_same_scenario_gives_the_same_trace_byte_for_byte() {
    let mut rng = runner(7, 1);
    let tree = scenario().new_tree(&mut rng).expect("a scenario");
    let scenario = tree.current();
    let first = sim::run(&scenario).expect("keeps the invariants");
    assert_eq!(sim::run(&scenario).expect("again"), first);
    assert!(first.len() > 1, "{first:?}");
}

#[test]
fn a_crash_after_the_crm_answered_still_makes_one_task() {
    // The worker dies after the CRM made the task (port calls: inbox read 0,
    // reserve 1, create 2), then the message returns after its visibility
    // timeout and the lease has expired.
    for strategy in [CrmStrategy::IdempotencyKey, CrmStrategy::Lookup] {
        let scenario = Scenario {
            strategy,
            max_receives: 5,
            ops: vec![
                Op::Deliver(0),
                Op::Work {
                    pick: 0,
                    crash_at: Some(2),
                    lose_answer_at: None,
                },
                Op::Deliver(1),
            ],
        };
        let trace = sim::run(&scenario).unwrap_or_else(|e| panic!("{strategy:?}: {e}"));
        assert!(
            trace.iter().any(|l| l.contains("crashed at port call 2")),
            "{trace:#?}"
        );
        assert!(
            trace
                .iter()
                .any(|l| l.contains("done: 1 action(s) settled")),
            "{trace:#?}"
        );
    }
}
