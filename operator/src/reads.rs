//! What the operator tools read, on the core's ports: triage lists, an
//! item's evidence and what approving it would do, open actions, records,
//! the statistics and the overview's figures. Pure of I/O beyond the ports,
//! and `now` is passed in.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use hookgate_core::{
    InboxPk, Timestamp,
    action::ActionKey,
    config::Config,
    inbox::InboxRecord,
    ledger::{ActionRecord, ActionStatus},
    page::{Cursor, Page},
    ports::{InboxReads, InboxStore, Ledger, LedgerReads, StoreError, TriageReads, TriageStore},
    rules::Decision,
    triage::{TriageClass, TriageItem, TriageStatus},
};
use serde::Serialize;

use crate::{
    activity::{HOUR_MS, Hour, hourly},
    plan::{Selection, before},
};

/// One key of an item's event: what approving the item would do with it,
/// and the action's ledger record (`None`: the row names no action;
/// `Some(None)`: the action is not reserved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewRow {
    pub key: String,
    pub would: String,
    pub record: Option<Option<ActionRecord>>,
}

/// One item's evidence, each record read once: the item, its event's inbox
/// record, and per key of the event what approving would do.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub item: TriageItem,
    pub inbox: Option<InboxRecord>,
    pub rows: Vec<PreviewRow>,
}

/// `hookgate stats`: deliveries and duplicates in a window, collisions,
/// triage items by class, open actions and the oldest pending one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    pub since_secs: u64,
    pub events: u64,
    pub deliveries: u64,
    pub duplicates: u64,
    pub duplicate_rate: f64,
    pub collisions: u64,
    /// Items first seen in the window, by class (only classes with items).
    pub triage_by_class: BTreeMap<&'static str, u64>,
    /// Every open status, with its count.
    pub open_actions: BTreeMap<&'static str, u64>,
    pub oldest_pending_action_age_secs: Option<u64>,
}

impl Stats {
    /// How many items of `class` the window holds.
    pub fn triage(&self, class: TriageClass) -> u64 {
        self.triage_by_class
            .get(class.as_str())
            .copied()
            .unwrap_or(0)
    }

    pub fn open(&self, status: ActionStatus) -> u64 {
        self.open_actions.get(status.as_str()).copied().unwrap_or(0)
    }
}

/// The statuses an open action can have.
pub const OPEN: [ActionStatus; 4] = [
    ActionStatus::Pending,
    ActionStatus::InProgress,
    ActionStatus::Failed,
    ActionStatus::Uncertain,
];

/// The open statuses as the console offers them, the one to reconcile first.
pub const OPEN_SHOWN: [ActionStatus; 4] = [
    ActionStatus::Uncertain,
    ActionStatus::Failed,
    ActionStatus::Pending,
    ActionStatus::InProgress,
];

/// The operator's reads of one deployment.
#[derive(Debug)]
pub struct Reads<I, L, T> {
    config: Arc<Config>,
    inbox: I,
    ledger: L,
    triage: T,
}

impl<I, L, T> Reads<I, L, T> {
    pub fn new(config: Arc<Config>, inbox: I, ledger: L, triage: T) -> Self {
        Self {
            config,
            inbox,
            ledger,
            triage,
        }
    }
}

impl<I: InboxStore + InboxReads, L: Ledger + LedgerReads, T: TriageStore + TriageReads>
    Reads<I, L, T>
{
    /// A page of `limit` items with `status` after `cursor`, oldest first,
    /// those of another class than `class` left out (so a filtered page may
    /// hold fewer; its token still leads on).
    pub async fn triage_page(
        &self,
        status: TriageStatus,
        class: Option<TriageClass>,
        limit: usize,
        cursor: &Cursor,
    ) -> Result<Page<TriageItem>, StoreError> {
        let mut page = self.triage.page(status, limit, cursor).await?;
        page.items.retain(|i| class.is_none_or(|c| i.class == c));
        Ok(page)
    }

    /// Items with `status`, optionally of one class, oldest first.
    pub async fn triage_list(
        &self,
        status: TriageStatus,
        class: Option<TriageClass>,
    ) -> Result<Vec<TriageItem>, StoreError> {
        let mut items = self.triage.list(status).await?;
        items.retain(|i| class.is_none_or(|c| i.class == c));
        Ok(items)
    }

    pub async fn triage_item(&self, id: &str) -> Result<Option<TriageItem>, StoreError> {
        self.triage.get(id).await
    }

    /// The HELD items `selection` takes at `now`.
    pub async fn selected(
        &self,
        selection: &Selection,
        now: Timestamp,
    ) -> Result<Vec<TriageItem>, StoreError> {
        let mut items = self.triage.list(TriageStatus::Held).await?;
        items.retain(|i| selection.takes(i, now));
        Ok(items)
    }

    /// What approving `item` would do: each action of its event and its
    /// ledger state (COMPLETED = no-op; PENDING/FAILED = performed; a
    /// different request = collision, refused again), with the event's
    /// inbox record it read.
    pub async fn preview(
        &self,
        item: &TriageItem,
    ) -> Result<(Option<InboxRecord>, Vec<PreviewRow>), StoreError> {
        let row = |key: String, would: &str| PreviewRow {
            key,
            would: would.to_owned(),
            record: None,
        };
        let Some(pk) = &item.inbox_pk else {
            let would = "ingested through the ingress with its original id";
            return Ok((None, vec![row("(event)".into(), would)]));
        };
        let Some(record) = self.inbox.get(pk).await? else {
            let would = "inbox record gone: nothing to re-inject";
            return Ok((None, vec![row(pk.to_string(), would)]));
        };
        let Decision::Actions(requests) = record.decide(&self.config.rules) else {
            let rows = vec![row(pk.to_string(), "no action requested")];
            return Ok((Some(record), rows));
        };
        let mut out = Vec::new();
        for request in requests {
            let action = self.ledger.get(&request.key).await?;
            let would = match &action {
                None => "not reserved: would be performed".to_owned(),
                Some(a) if a.request_sha256 != request.request_sha256 => {
                    "collision: would be refused".to_owned()
                }
                Some(a) => match a.status {
                    ActionStatus::Completed => "COMPLETED: no-op".to_owned(),
                    other => format!("{other}: would be performed"),
                },
            };
            out.push(PreviewRow {
                key: request.key.to_string(),
                would,
                record: Some(action),
            });
        }
        Ok((Some(record), out))
    }

    /// One item's evidence; `None`: no such item.
    pub async fn evidence(&self, id: &str) -> Result<Option<Evidence>, StoreError> {
        let Some(item) = self.triage.get(id).await? else {
            return Ok(None);
        };
        let (inbox, rows) = self.preview(&item).await?;
        Ok(Some(Evidence { item, inbox, rows }))
    }

    pub async fn inbox_record(&self, pk: &InboxPk) -> Result<Option<InboxRecord>, StoreError> {
        self.inbox.get(pk).await
    }

    pub async fn action(&self, key: &ActionKey) -> Result<Option<ActionRecord>, StoreError> {
        self.ledger.get(key).await
    }

    /// Actions with `status` (not COMPLETED), created at least `older_than`
    /// before `now` when given, oldest first.
    pub async fn actions(
        &self,
        status: ActionStatus,
        older_than: Option<Duration>,
        now: Timestamp,
    ) -> Result<Vec<ActionRecord>, StoreError> {
        let mut actions = self.ledger.list_open(status).await?;
        actions.retain(|a| older_than.is_none_or(|age| now.since(a.created_at) >= age));
        Ok(actions)
    }

    /// A page of [`Reads::actions`]: at most `limit` actions read after
    /// `cursor`, the younger than `older_than` left out.
    pub async fn actions_page(
        &self,
        status: ActionStatus,
        older_than: Option<Duration>,
        (limit, cursor): (usize, &Cursor),
        now: Timestamp,
    ) -> Result<Page<ActionRecord>, StoreError> {
        let mut page = self.ledger.open_page(status, limit, cursor).await?;
        page.items
            .retain(|a| older_than.is_none_or(|age| now.since(a.created_at) >= age));
        Ok(page)
    }

    /// The statistics of the `since` before `now`.
    pub async fn stats(&self, now: Timestamp, since: Duration) -> Result<Stats, StoreError> {
        let records = self.inbox.received_since(before(now, since)).await?;
        self.stats_of(now, since, &records).await
    }

    /// [`Reads::stats`] over `since`, and the deliveries and completed
    /// actions per hour over the last `hours` (at most 14 days), from one
    /// read of the inbox: the console's overview.
    pub async fn overview(
        &self,
        now: Timestamp,
        since: Duration,
        hours: usize,
    ) -> Result<(Stats, Vec<Hour>), StoreError> {
        let hours = hours.clamp(1, 24 * 14);
        let chart_since = Timestamp::from_millis(
            (now.as_millis().div_euclid(HOUR_MS) - (hours as i64 - 1)) * HOUR_MS,
        );
        let from = chart_since.min(before(now, since));
        let records = self.inbox.received_since(from).await?;
        let stats = self.stats_of(now, since, &records).await?;
        let completed = self.ledger.completed_since(chart_since).await?;
        Ok((stats, hourly(now, hours, &records, &completed)))
    }

    /// The statistics over inbox records already read: those received
    /// since `since` before `now` count.
    async fn stats_of(
        &self,
        now: Timestamp,
        since: Duration,
        read: &[InboxRecord],
    ) -> Result<Stats, StoreError> {
        let cutoff = before(now, since);
        let records: Vec<&InboxRecord> = read.iter().filter(|r| r.received_at >= cutoff).collect();
        let events = records.len() as u64;
        let deliveries: u64 = records.iter().map(|r| u64::from(r.delivery_count)).sum();
        let duplicates = deliveries - events;
        let collisions = records.iter().filter(|r| r.collision.is_some()).count() as u64;
        // Each status's items of the window, by the index's range: decided
        // items never expire, and a read of all of them would grow with
        // history.
        let mut triage_by_class = BTreeMap::new();
        for status in TriageStatus::ALL {
            for item in self.triage.seen_since(*status, cutoff).await? {
                *triage_by_class.entry(item.class.as_str()).or_insert(0) += 1;
            }
        }
        let mut open_actions = BTreeMap::new();
        let mut oldest: Option<Timestamp> = None;
        for status in OPEN {
            let (count, first) = self.ledger.open_count(status).await?;
            if matches!(status, ActionStatus::Pending | ActionStatus::InProgress) {
                oldest = first.into_iter().chain(oldest).min();
            }
            open_actions.insert(status.as_str(), count);
        }
        Ok(Stats {
            since_secs: since.as_secs(),
            events,
            deliveries,
            duplicates,
            duplicate_rate: if deliveries == 0 {
                0.0
            } else {
                duplicates as f64 / deliveries as f64
            },
            collisions,
            triage_by_class,
            open_actions,
            oldest_pending_action_age_secs: oldest.map(|t| now.since(t).as_secs()),
        })
    }
}
