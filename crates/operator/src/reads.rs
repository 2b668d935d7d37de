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
    page::{self, Cursor, Page, Scoped, Take},
    ports::{
        InboxStore, Ledger, LedgerReads, MetricReads, Series, Store, StoreError, TriageReads,
        TriageStore,
    },
    rules::Decision,
    triage::{TriageClass, TriageItem, TriageStatus},
};
use serde::Serialize;

use crate::{
    Caller,
    activity::{Hour, chart_start, hourly},
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

/// `hookgate stats`: what the ingress received and the worker completed in
/// a window, from the metrics (docs/operations.md, "Metric schema"), with the
/// open actions and the oldest pending one from the ledger's open index.
/// Neither read grows with the tables' history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    pub since_secs: u64,
    /// Every request the ingress answered (`Deliveries`), refused ones too.
    pub deliveries: u64,
    /// Repeats of an event already received (`Duplicates`).
    pub duplicates: u64,
    /// `duplicates` / `deliveries`, as the dashboard draws it.
    pub duplicate_rate: f64,
    /// Repeats with another payload (`Collisions`).
    pub collisions: u64,
    /// Refused with a 4xx: forged, stale, malformed (`Rejected`).
    pub rejected: u64,
    /// Actions the worker completed (`ActionsCompleted`).
    pub completed: u64,
    /// Items held in the window, by class (`TriageItems`; only classes with
    /// items).
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
pub struct Reads<I, L, T, M> {
    config: Arc<Config>,
    inbox: I,
    ledger: L,
    triage: T,
    metrics: M,
}

impl<I, L, T, M> Reads<I, L, T, M> {
    pub fn new(config: Arc<Config>, (inbox, ledger, triage): (I, L, T), metrics: M) -> Self {
        Self {
            config,
            inbox,
            ledger,
            triage,
            metrics,
        }
    }

    /// Whether `caller` may read what belongs to `workspace`: the deciders'
    /// rule (`[[ops.deciders]]`), for reads as for decisions, where the ops
    /// API and the console serve them. Without deciders everyone may; what
    /// names no workspace (or an id that does not exist) only a `*` decider.
    pub fn may_read(&self, caller: &Caller, workspace: Option<&str>) -> bool {
        self.config.may_decide(&caller.arn, workspace)
    }

    /// Why `caller` may not read `what` (as asked for: "triage item X"),
    /// which belongs to `workspace`, if it may not. The answer names only
    /// what was asked, never the workspace found, so an id's existence and
    /// owner cannot be probed.
    pub fn out_of_scope(
        &self,
        caller: &Caller,
        workspace: Option<&str>,
        what: &str,
    ) -> Option<String> {
        (!self.may_read(caller, workspace)).then(|| format!("{} may not read {what}", caller.arn))
    }

    /// The same reads over other metrics.
    pub fn with_metrics<N>(self, metrics: N) -> Reads<I, L, T, N> {
        Reads {
            config: self.config,
            inbox: self.inbox,
            ledger: self.ledger,
            triage: self.triage,
            metrics,
        }
    }
}

/// The reads of the tables (the ops API serves these; `M` may be `()`).
impl<I: InboxStore, L: Ledger + LedgerReads, T: TriageStore + TriageReads, M> Reads<I, L, T, M> {
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

    /// A page as `caller` may read it: another workspace's items left out,
    /// and its token carrying nothing of them (docs/iam.md).
    pub async fn triage_page_for(
        &self,
        caller: &Caller,
        status: TriageStatus,
        class: Option<TriageClass>,
        limit: usize,
        cursor: &Cursor,
    ) -> Result<Page<TriageItem>, StoreError> {
        // A caller of every workspace reads every item: the list's own
        // token names nothing out of its scope.
        if self.may_read(caller, None) {
            return self.triage_page(status, class, limit, cursor).await;
        }
        let of = page::triage_list(status);
        let mut scoped = Scoped::new(cursor, limit);
        let mut reading = cursor.clone();
        loop {
            let read = self.triage.page(status, limit, &reading).await?;
            let after = read
                .next
                .as_deref()
                .map(|t| Cursor::parse(t, &of))
                .transpose()
                .map_err(StoreError::corrupt(Store::Triage))?;
            let take = |i: &TriageItem| {
                if !self.may_read(caller, i.workspace.as_deref()) {
                    Take::Foreign
                } else if class.is_some_and(|c| i.class != c) {
                    Take::Skip
                } else {
                    Take::Keep
                }
            };
            let order = |i: &TriageItem| (i.first_seen.as_millis(), i.id.clone());
            let done = scoped.feed(read.items, after.as_ref(), order, take);
            match after {
                Some(next) if !done => reading = next,
                _ => return Ok(scoped.finish()),
            }
        }
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

    /// Each item's event type, by item id (the triage list's event column):
    /// its inbox record's, read sixteen at a time; an item with no record
    /// (an EventBridge dead letter), or whose read failed, has none.
    pub async fn event_types(
        &self,
        items: &[TriageItem],
    ) -> Result<BTreeMap<String, String>, StoreError> {
        let mut types = BTreeMap::new();
        for chunk in items.chunks(16) {
            let keyed: Vec<(&str, &InboxPk)> = chunk
                .iter()
                .filter_map(|i| Some((i.id.as_str(), i.inbox_pk.as_ref()?)))
                .collect();
            let mut reads = Vec::with_capacity(keyed.len());
            for (_, pk) in &keyed {
                reads.push(self.inbox.get(pk));
            }
            // A read that fails leaves that item's column empty: the list
            // is the page, the type only a help to it.
            let records = futures_util::future::join_all(reads).await;
            for ((id, _), record) in keyed.into_iter().zip(records) {
                if let Ok(Some(record)) = record {
                    types.insert(id.to_owned(), record.event_type);
                }
            }
        }
        Ok(types)
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
}

/// The figures, which read the metrics too.
impl<I: InboxStore, L: Ledger + LedgerReads, T: TriageStore + TriageReads, M: MetricReads>
    Reads<I, L, T, M>
{
    /// The statistics of the `since` before `now` (its start rounded down to
    /// the window's period: a minute up to a day, see [`window_period`]).
    pub async fn stats(&self, now: Timestamp, since: Duration) -> Result<Stats, StoreError> {
        Ok(self.overview(now, since, 0).await?.0)
    }

    /// [`Reads::stats`] over `since`, and the deliveries and completed
    /// actions per hour over the last `hours` (at most 14 days; none for 0):
    /// the console's overview. One read of the metrics for each, and one of
    /// the open index per open status.
    pub async fn overview(
        &self,
        now: Timestamp,
        since: Duration,
        hours: usize,
    ) -> Result<(Stats, Vec<Hour>), StoreError> {
        let (series, period) = (window_series(), window_period(since));
        let from = floor(before(now, since), period);
        let sums = self
            .metrics
            .sums(&series, from, ceil(now, period), period)
            .await?;
        let total = |i: usize| sums[i].iter().map(|(_, v)| *v).sum::<f64>() as u64;
        let mut triage_by_class = BTreeMap::new();
        for (i, class) in TriageClass::ALL.iter().enumerate() {
            let held = total(WINDOW_METRICS.len() + i);
            if held > 0 {
                triage_by_class.insert(class.as_str(), held);
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
        let (deliveries, duplicates) = (total(0), total(1));
        let stats = Stats {
            since_secs: since.as_secs(),
            deliveries,
            duplicates,
            duplicate_rate: if deliveries == 0 {
                0.0
            } else {
                duplicates as f64 / deliveries as f64
            },
            collisions: total(2),
            rejected: total(3),
            completed: total(4),
            triage_by_class,
            open_actions,
            oldest_pending_action_age_secs: oldest.map(|t| now.since(t).as_secs()),
        };
        if hours == 0 {
            return Ok((stats, Vec::new()));
        }
        let (first, hour) = chart_start(now, hours);
        let chart = [
            Series::service("Deliveries"),
            Series::service("ActionsCompleted"),
        ];
        let sums = self
            .metrics
            .sums(&chart, first, ceil(now, hour), hour)
            .await?;
        Ok((stats, hourly(now, hours, &sums[0], &sums[1])))
    }
}

/// The `[service]` metrics the statistics sum, in [`Stats`]' order.
const WINDOW_METRICS: [&str; 5] = [
    "Deliveries",
    "Duplicates",
    "Collisions",
    "Rejected",
    "ActionsCompleted",
];

/// The statistics' series: [`WINDOW_METRICS`], then `TriageItems` of each
/// class in [`TriageClass::ALL`]'s order.
fn window_series() -> Vec<Series> {
    let mut series: Vec<Series> = WINDOW_METRICS.iter().map(|m| Series::service(m)).collect();
    series.extend(TriageClass::ALL.iter().map(|class| Series {
        metric: "TriageItems",
        dimensions: vec![("class", class.as_str().to_owned())],
    }));
    series
}

/// The period a window is summed over: a minute up to a day (1,440 values a
/// series), five up to five days, then an hour, so a read stays far below
/// GetMetricData's 100,800 values.
fn window_period(since: Duration) -> Duration {
    let minutes = match since.as_secs() {
        0..=86_400 => 1,
        86_401..=432_000 => 5,
        _ => 60,
    };
    Duration::from_secs(60 * minutes)
}

/// `t` rounded down to a multiple of `period`.
fn floor(t: Timestamp, period: Duration) -> Timestamp {
    let ms = i64::try_from(period.as_millis()).unwrap_or(i64::MAX).max(1);
    Timestamp::from_millis(t.as_millis().div_euclid(ms) * ms)
}

/// The end of the period holding `t`: a read ends there, not at `t`, so its
/// times align with the period as CloudWatch advises, and a value of the
/// last second is not cut off where the end is truncated to the second
/// (moto does; nothing later than `t` exists to be read).
fn ceil(t: Timestamp, period: Duration) -> Timestamp {
    let ms = i64::try_from(period.as_millis()).unwrap_or(i64::MAX).max(1);
    Timestamp::from_millis(floor(t, period).as_millis() + ms)
}
