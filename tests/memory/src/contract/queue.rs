//! What every `ActionQueue` must do, as one suite: run on `MemoryQueue` by
//! the fast tests and on `SqsActionQueue` against the emulator by the
//! integration tests. The port only sends; each backend reads its messages
//! back its own way (`received`).

use std::{future::Future, time::Duration};

use hookgate_core::{
    InboxPk,
    inbox::Origin,
    message::{MessageKind, QueueMessage},
    ports::ActionQueue,
};

fn message(ns: &str, name: &str, origin: Origin) -> QueueMessage {
    let pk = InboxPk::parse(&format!("ws-1#retell#{ns}-{name}")).expect("inbox key");
    QueueMessage::for_event(&pk, origin)
}

fn sorted(mut messages: Vec<(QueueMessage, MessageKind)>) -> Vec<(QueueMessage, MessageKind)> {
    messages.sort_by_key(|(m, k)| (m.to_json(), k.as_str()));
    messages
}

/// Runs every check on `queue`, which must hold no message; `received`
/// reads back every message sent so far, in any order (a standard queue
/// keeps none).
pub async fn action_queue_contract<Q, R, F>(queue: &Q, received: R, ns: &str)
where
    Q: ActionQueue,
    R: FnOnce() -> F,
    F: Future<Output = Vec<(QueueMessage, MessageKind)>>,
{
    let (a, b) = (
        message(ns, "a", Origin::Http),
        message(ns, "b", Origin::Eventbridge),
    );
    queue.send(&a, MessageKind::Event).await.unwrap();
    queue.send(&b, MessageKind::Reinjected).await.unwrap();
    // A second send is a second message: the queue does not deduplicate
    // (the worker's ledger does).
    queue.send(&a, MessageKind::Event).await.unwrap();
    let expected = vec![
        (a.clone(), MessageKind::Event),
        (b, MessageKind::Reinjected),
        (a, MessageKind::Event),
    ];
    assert_eq!(sorted(received().await), sorted(expected));
}

/// A message sent with a delay (`send_after`, a wait for a destination's
/// search) is not received before it and is received after it, with its
/// body and kind; a delay in part of a second counts as the whole second.
/// `received` reads back what a receive could get now; `pass` lets that
/// much time go by. `queue` must hold no message.
pub async fn delayed_send_contract<Q, R, F, P, G>(queue: &Q, received: R, pass: P, ns: &str)
where
    Q: ActionQueue,
    R: Fn() -> F,
    F: Future<Output = Vec<(QueueMessage, MessageKind)>>,
    P: Fn(Duration) -> G,
    G: Future<Output = ()>,
{
    let a = message(ns, "later", Origin::Http);
    queue
        .send_after(&a, MessageKind::Reinjected, Duration::from_millis(1_500))
        .await
        .unwrap();
    assert_eq!(received().await, vec![], "received before its delay");
    pass(Duration::from_millis(1_000)).await;
    assert_eq!(
        received().await,
        vec![],
        "a part of a second is a whole one"
    );
    pass(Duration::from_millis(1_500)).await;
    assert_eq!(received().await, vec![(a, MessageKind::Reinjected)]);
}
