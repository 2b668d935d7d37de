//! What one load of the console's overview costs in AWS requests and
//! DynamoDB read units, over an inbox of 100 records and of 10,000, with the
//! same held items and open actions: the two must be equal, or the page's
//! cost grows with history (docs/capacity.md, "The console's overview").
//!
//! The console's calls are tagged `operator.overview` and metered by the
//! emulator (`Emulator::served`): read units from the items each read
//! returned, as DynamoDB bills them.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use hookgate_tests::{emulator::Emulator, pipeline::Pipeline};

use crate::{
    console::{hold_outage, serve, with_session},
    operator_ops,
};

const APP: &str = "operator.overview";

/// Writes copies of one of the inbox's records under new keys until the
/// table holds `total`.
async fn fill_inbox(p: &Pipeline, total: usize) {
    let have = usize::try_from(p.stack.inbox_count().await).unwrap();
    let template = p
        .stack
        .ddb
        .scan()
        .table_name(&p.stack.inbox_table)
        .limit(1)
        .send()
        .await
        .unwrap()
        .items
        .unwrap()
        .remove(0);
    let pk = template["pk"].as_s().unwrap().clone();
    let copies: Vec<WriteRequest> = (have..total)
        .map(|i| {
            let mut item = template.clone();
            let key = AttributeValue::S(format!("{pk}-copy{i}"));
            item.insert("pk".into(), key.clone());
            item.insert("pending_bucket".into(), key);
            let put = PutRequest::builder().set_item(Some(item)).build().unwrap();
            WriteRequest::builder().put_request(put).build()
        })
        .collect();
    for batch in copies.chunks(25) {
        let mut pending = Some(batch.to_vec());
        while let Some(writes) = pending.take().filter(|w| !w.is_empty()) {
            let answer = p
                .stack
                .ddb
                .batch_write_item()
                .request_items(&p.stack.inbox_table, writes)
                .send()
                .await
                .unwrap();
            pending = answer
                .unprocessed_items
                .and_then(|mut u| u.remove(&p.stack.inbox_table));
        }
    }
    assert_eq!(p.stack.inbox_count().await, i32::try_from(total).unwrap());
}

/// One GET of the overview: the console's requests per operation and read
/// units.
async fn load(base: &str) -> (BTreeMap<String, u64>, f64) {
    let emulator = Emulator::shared();
    let (before, units_before) = emulator.served(APP).await;
    let page = with_session().get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("held-count"), "{html}");
    let (after, units_after) = emulator.served(APP).await;
    let spent = after
        .into_iter()
        .map(|(op, n)| {
            let was = before.get(&op).copied().unwrap_or(0);
            (op, n - was)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    (spent, units_after - units_before)
}

#[tokio::test]
async fn an_overview_costs_the_same_over_100_inbox_records_as_over_10_000() {
    let p = Pipeline::new("ov-cost").await;
    // The same held items and open actions under both inboxes.
    hold_outage(&p, &[("call_ov1", "cb-ov1"), ("call_ov2", "cb-ov2")]).await;
    let console = serve(operator_ops(&p, APP).await).await;
    let base = console.base.clone();

    fill_inbox(&p, 100).await;
    let (small, small_units) = load(&base).await;
    fill_inbox(&p, 10_000).await;
    let (large, large_units) = load(&base).await;
    println!("overview over 100 records: {small:?}, {small_units} read units");
    println!("overview over 10,000 records: {large:?}, {large_units} read units");
    assert_eq!(small, large, "requests per operation");
    assert!(
        (small_units - large_units).abs() < 1e-9,
        "read units: {small_units} over 100 records, {large_units} over 10,000"
    );
    // No scan of any table, and the figures from two metric reads.
    assert!(!small.contains_key("Scan"), "{small:?}");
    assert_eq!(small.get("GetMetricData"), Some(&2), "{small:?}");
    let _ = console.stop.send(());
    console.serving.await.unwrap().unwrap();
}
