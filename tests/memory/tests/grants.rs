//! The grant protocol across instances, simulated (`hookgate_memory::sim::grants`):
//! a crowd on an expired token, a refresher killed between the token
//! endpoint's answer and the secret's write, and seeded schedules with
//! crashes, lost answers, throttles and leases running out.

use std::time::Duration;

use hookgate_core::{
    failure::FailureKind,
    grant::{GrantStatuses, GrantStore},
};
use hookgate_memory::sim::grants::{Rng, World, acceptable};

/// Polls the running instances in `rng`'s order, one port call at a time,
/// until all are done; 200 ms pass after each round of 60 polls per
/// instance running (more than a refresh takes: time passes while they
/// wait, not in the middle of a step).
fn drain(world: &mut World, rng: &mut Rng) {
    for _ in 0..1_000 {
        let running: Vec<usize> = (0..world.len()).filter(|i| world.running(*i)).collect();
        if running.is_empty() {
            return;
        }
        for _ in 0..60 * running.len() {
            world.poll(running[rng.below(running.len() as u64) as usize]);
            world.check();
        }
        world.pass(Duration::from_millis(200));
    }
    panic!("still running: {world:?}");
}

#[test]
fn twenty_instances_on_an_expired_token_make_exactly_one_refresh() {
    for seed in 0..300 {
        let mut world = World::new(20, Duration::ZERO);
        world.expired();
        for i in 0..20 {
            world.start(i, false);
        }
        drain(&mut world, &mut Rng::new(seed));
        let server = world.server.lock().unwrap();
        assert_eq!(server.redemptions, 1, "seed {seed}");
        let tokens: std::collections::BTreeSet<_> = world
            .results
            .iter()
            .map(|r| r.as_ref().expect("a token").token.value.expose().to_vec())
            .collect();
        assert_eq!(tokens.len(), 1, "seed {seed}: one token for all");
        assert_eq!(world.results.len(), 20);
    }
}

/// Instance 0 refreshes until the token server has answered, and is
/// killed before the secret's write.
fn killed_after_the_answer(world: &mut World) {
    world.expired();
    world.start(0, false);
    while world.server.lock().unwrap().redemptions == 0 {
        assert!(!world.poll(0), "ended before the server answered");
    }
    world.crash(0);
    // Nothing stored: the record still marks the token presented.
    let record = world.store.record("crm").unwrap();
    assert!(record.presented.is_some() && record.lock.is_some());
}

#[tokio::test]
async fn a_refresher_killed_between_the_answer_and_the_write_is_recovered_within_the_reuse_interval()
 {
    let mut world = World::new(2, Duration::from_secs(30));
    killed_after_the_answer(&mut world);
    let result = world.settled_request();
    let issued = result.expect("recovered within the reuse interval");
    let seen = {
        let server = world.server.lock().unwrap();
        (server.redemptions, server.presented_stale)
    };
    assert_eq!(seen, (2, 0));
    assert_eq!(issued.version, 2);
    let status = world.store.status("crm").await.unwrap().expect("a status");
    assert!(status.refusal.is_none() && status.refreshed_at.is_some());
}

#[tokio::test]
async fn a_refresher_killed_with_no_reuse_interval_is_held_never_presented_again() {
    let mut world = World::new(2, Duration::ZERO);
    killed_after_the_answer(&mut world);
    let held = world.settled_request().expect_err("held");
    assert_eq!(held.kind, FailureKind::Authorization, "{held}");
    assert!(held.detail.contains("re-authorize"), "{held}");
    // Asked again: held at once, the token endpoint not asked.
    let again = world.settled_request().expect_err("still held");
    assert_eq!(again.kind, FailureKind::Authorization);
    assert_eq!(world.server.lock().unwrap().redemptions, 1);
    let status = world.store.status("crm").await.unwrap().expect("a status");
    assert!(status.refusal.unwrap().contains("cut off"));
    let record = world.store.read("crm").await.unwrap().unwrap();
    assert!(record.refusal.is_some() && record.lock.is_none());
    // A person re-authorizes: the new refresh token is tried at once.
    world.reauthorize("rt-fixed");
    let issued = world
        .settled_request()
        .expect("a token after re-authorizing");
    assert_eq!(issued.version, 2);
    assert_eq!(world.server.lock().unwrap().presented_stale, 0);
}

#[test]
fn a_client_secret_refused_then_fixed_leaves_the_rotating_grant_usable() {
    // The client secret expires at the server: the refresh is answered
    // invalid_client, which issued and rotated nothing.
    let mut world = World::new(1, Duration::ZERO);
    world.expired();
    world.expire_client_secret("cs-new");
    let held = world.settled_request().expect_err("held");
    assert_eq!(held.kind, FailureKind::Authorization);
    assert!(held.detail.contains("invalid_client"), "{held}");
    // A person puts the new client secret in: tried at once, and the
    // refresh token presented before is not taken for a rotated one.
    world.fix_client_secret();
    let issued = world
        .settled_request()
        .expect("a token once the secret is fixed");
    assert_eq!(issued.version, 2);
    let server = world.server.lock().unwrap();
    assert_eq!((server.redemptions, server.presented_stale), (1, 0));
}

/// `SIM_CASES` / 20 schedules (300 at least) from `SIM_SEED` (or 1), after
/// the 300 of seeds 1 to 300, which always run: the run must reach both
/// ends of a cut-off refresh, a hold and a token presented again within
/// its reuse interval, whatever seed it is given.
#[test]
fn every_simulated_grant_schedule_keeps_the_grant_or_holds_it_for_a_person() {
    let cases: u64 = std::env::var("SIM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(300, |n: u64| (n / 20).max(300));
    let base: u64 = std::env::var("SIM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let seeds = (1..=300).chain((0..cases).map(|case| base.wrapping_add(case)));
    let (mut held, mut reused) = (0, 0);
    for seed in seeds {
        let mut rng = Rng::new(seed);
        let reuse = Duration::from_secs([0, 30, 600, 3600][rng.below(4) as usize]);
        let mut world = World::new(1 + rng.below(6) as usize, reuse);
        world.expired();
        world.run(&mut rng, 400);
        let last = world.settled_request();
        assert!(acceptable(&last), "seed {seed}: {last:?} {:?}", world.trace);
        if last.is_err() {
            assert!(
                world.cut_offs > 0,
                "seed {seed}: held with no refresh cut off"
            );
            held += 1;
        }
        reused += world.server.lock().unwrap().reused;
    }
    assert!(held > 0 && reused > 0, "held {held}, reused {reused}");
    eprintln!(
        "{} schedules: {held} held for a person, {reused} tokens presented again within the \
         reuse interval",
        300 + cases
    );
}
