//! What every `GrantStore` and `GrantStatuses` must do, as one suite: run
//! on `MemoryGrants` by the fast tests and on `DynamoGrants` against the
//! emulator by the integration tests.

use std::time::Duration;

use hookgate_core::{
    Timestamp,
    grant::{AccessToken, Finish, GrantStatus, GrantStatuses, GrantStore, Presented, Refusal},
    secret::Secret,
};

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn at(secs: u64) -> Timestamp {
    T0.plus(Duration::from_secs(secs))
}

fn token(value: &str, base_url: Option<&str>) -> AccessToken {
    AccessToken {
        value: Secret::new(value),
        expires_at: at(3600),
        base_url: base_url.map(str::to_owned),
    }
}

/// `ns` names the run's destinations, so runs on one table stay apart.
pub async fn grant_store_contract(store: &(impl GrantStore + GrantStatuses), ns: &str) {
    let d = format!("crm-{ns}");
    assert_eq!(store.read(&d).await.expect("read"), None);

    // The first lock: the record as it was (none). A second owner waits.
    let before = store.lock(&d, "a", at(0), at(10)).await.expect("lock");
    assert_eq!(before, Some(Default::default()));
    assert_eq!(
        store.lock(&d, "b", at(5), at(15)).await.expect("lock"),
        None
    );
    // Only the owner writes.
    let fp1 = Presented {
        fingerprint: "fp-1".into(),
        at: at(1),
    };
    assert!(!store.presenting(&d, "b", &fp1).await.expect("presenting"));
    assert!(store.presenting(&d, "a", &fp1).await.expect("presenting"));
    let read = store.read(&d).await.expect("read").expect("a record");
    let lock = read.lock.expect("locked");
    assert_eq!(
        (lock.owner.as_str(), lock.since, lock.until),
        ("a", at(0), at(10))
    );
    assert_eq!(read.presented.as_ref(), Some(&fp1));

    // Past its lease, another takes the lock and sees the one cut off, and
    // the token it presented, which a taken lock keeps.
    let before = store.lock(&d, "b", at(10), at(20)).await.expect("lock");
    let before = before.expect("taken");
    assert_eq!(before.lock.expect("the cut-off lock").owner, "a");
    assert_eq!(before.presented.as_ref(), Some(&fp1));
    let read = store.read(&d).await.expect("read").expect("a record");
    assert_eq!(read.presented.as_ref(), Some(&fp1));
    let finish = Finish::Token(token("at-1", Some("https://acme.example")));
    assert_eq!(
        store
            .finish(&d, "a", &finish, at(11))
            .await
            .expect("finish"),
        None
    );
    assert_eq!(
        store
            .finish(&d, "b", &finish, at(11))
            .await
            .expect("finish"),
        Some(1)
    );
    let read = store.read(&d).await.expect("read").expect("a record");
    assert_eq!(read.version, 1);
    assert_eq!(
        read.token,
        Some(token("at-1", Some("https://acme.example")))
    );
    assert_eq!(read.refreshed_at, Some(at(11)));
    assert_eq!(read.lock, None);
    // The lock is free at once, whatever its lease said.
    assert!(
        store
            .lock(&d, "c", at(12), at(22))
            .await
            .expect("lock")
            .is_some()
    );

    // A refusal keeps the token and its version; a token clears it.
    let refusal = Refusal {
        at: at(13),
        detail: "token endpoint answered 400 invalid_grant".into(),
        inputs: "fp-2".into(),
    };
    let refused = Finish::Refused {
        refusal: refusal.clone(),
        presented: None,
    };
    assert_eq!(
        store
            .finish(&d, "c", &refused, at(13))
            .await
            .expect("finish"),
        Some(1)
    );
    let read = store.read(&d).await.expect("read").expect("a record");
    assert_eq!((read.version, read.refusal.as_ref()), (1, Some(&refusal)));
    assert!(read.token.is_some() && read.lock.is_none());
    store
        .lock(&d, "c", at(14), at(24))
        .await
        .expect("lock")
        .expect("free");
    let finish = Finish::Token(token("at-2", None));
    assert_eq!(
        store
            .finish(&d, "c", &finish, at(15))
            .await
            .expect("finish"),
        Some(2)
    );
    let read = store.read(&d).await.expect("read").expect("a record");
    assert_eq!(
        (read.token, read.refusal),
        (Some(token("at-2", None)), None)
    );
    // Nothing: the lock goes, and the mark becomes what it says.
    let fp3 = Presented {
        fingerprint: "fp-3".into(),
        at: at(16),
    };
    for (owner, mark) in [("d", Some(fp3.clone())), ("e", None)] {
        let taken = store.lock(&d, owner, at(16), at(26)).await.expect("lock");
        assert!(taken.is_some());
        let nothing = Finish::Nothing(mark.clone());
        let finished = store.finish(&d, owner, &nothing, at(16)).await;
        assert_eq!(finished.expect("finish"), Some(2));
        let read = store.read(&d).await.expect("read").expect("a record");
        assert_eq!((read.lock, read.presented), (None, mark));
    }
    // A refusal makes the mark what it says (the one before the refused
    // request: here the token presented, as a refusal of a cut-off one
    // keeps it); a token stored clears it.
    let taken = store.lock(&d, "f", at(17), at(27)).await.expect("lock");
    assert!(taken.is_some());
    assert!(store.presenting(&d, "f", &fp3).await.expect("presenting"));
    let refused = Finish::Refused {
        refusal: refusal.clone(),
        presented: Some(fp1.clone()),
    };
    store
        .finish(&d, "f", &refused, at(17))
        .await
        .expect("finish");
    let read = store.read(&d).await.expect("read").expect("a record");
    assert_eq!(read.presented.as_ref(), Some(&fp1));
    let taken = store.lock(&d, "g", at(18), at(28)).await.expect("lock");
    assert!(taken.is_some());
    let finish = Finish::Token(token("at-3", None));
    store
        .finish(&d, "g", &finish, at(18))
        .await
        .expect("finish");
    let read = store.read(&d).await.expect("read").expect("a record");
    assert_eq!(read.presented, None);

    // The CRM refused the token of a version: recorded only while it is
    // the record's; the token and the version stay.
    let version = store
        .read(&d)
        .await
        .expect("read")
        .expect("a record")
        .version;
    let fresh = Refusal {
        at: at(19),
        detail: "the CRM refused an access token minted 2 s before (401)".into(),
        inputs: "fp-4".into(),
    };
    assert!(
        !store
            .refused(&d, version + 1, &fresh)
            .await
            .expect("refused")
    );
    assert!(store.refused(&d, version, &fresh).await.expect("refused"));
    let read = store.read(&d).await.expect("read").expect("a record");
    assert_eq!(
        (read.version, read.refusal.as_ref()),
        (version, Some(&fresh))
    );
    assert!(read.token.is_some());

    // A throttle: every instance left alone until its end, the mark as it
    // says; the next token clears the pause.
    let taken = store.lock(&d, "h", at(20), at(30)).await.expect("lock");
    assert!(taken.is_some());
    let throttled = Finish::Throttled {
        presented: Some(fp1.clone()),
        until: at(50),
    };
    store
        .finish(&d, "h", &throttled, at(20))
        .await
        .expect("finish");
    let read = store.read(&d).await.expect("read").expect("a record");
    assert_eq!(
        (read.paused_until, read.presented.as_ref()),
        (Some(at(50)), Some(&fp1))
    );
    assert_eq!(read.lock, None);
    let taken = store.lock(&d, "i", at(51), at(61)).await.expect("lock");
    assert!(taken.is_some());
    let finish = Finish::Token(token("at-4", None));
    store
        .finish(&d, "i", &finish, at(51))
        .await
        .expect("finish");
    let read = store.read(&d).await.expect("read").expect("a record");
    assert_eq!((read.paused_until, read.presented), (None, None));

    // The status operators read: a refusal keeps the last refresh.
    assert_eq!(store.status(&d).await.expect("status"), None);
    let refreshed = GrantStatus {
        destination: d.clone(),
        kind: "refresh-token",
        refreshed_at: Some(at(15)),
        expires_at: Some(at(3600)),
        refused_at: None,
        refusal: None,
    };
    store.publish(&refreshed).await.expect("publish");
    assert_eq!(
        store.status(&d).await.expect("status"),
        Some(refreshed.clone())
    );
    let refused = GrantStatus {
        refreshed_at: None,
        refused_at: Some(at(20)),
        refusal: Some("invalid_grant".into()),
        ..refreshed.clone()
    };
    store.publish(&refused).await.expect("publish");
    assert_eq!(
        store.status(&d).await.expect("status"),
        Some(GrantStatus {
            refreshed_at: Some(at(15)),
            ..refused
        })
    );
}
